// The link key of a branch, part for part as search/keys.py's LinkKeys.of makes it
// (lean or full, of a completed layer or inside one), and the shard that owns it as
// search/linking.py's route() names it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "bits.hpp"
#include "branch.hpp"
#include "facts.hpp"
#include "ids.hpp"
#include "python_hash.hpp"
#include "store.hpp"
#include "topology.hpp"

namespace dcmap {

template <int W>
class LinkKeys {
   public:
    using Mask = Bits<W>;

    // what it reads: the store (where it interns a key's parts), the network, and the
    // node-set facts of the components
    LinkKeys(Store<W>& store, const Topology<W>& topo, NodeSetFacts<W>& facts, bool full)
        : store_(store), topo_(topo), facts_(facts), full_(full),
          final_key(full ? Key::full_done(topo.l_max, store.empty_seq, store.empty_seq)
                         : Key::lean_done(topo.l_max, store.empty_seq, store.empty_seq, store.zero_words)) {}

    bool full() const { return full_; }

    Key of(const Branch& b) {
        Store<W>& s = store_;
        const Topology<W>& topo = topo_;
        const int layer = b.layer;
        Mask fixed;  // bit i: comps[i] is fixed at this layer
        Mask rest;
        std::vector<MaskId>& comps = comps_;
        std::vector<ItemId>& frontier = frontier_;
        Mask assigned;
        if (b.layer_done()) {
            rest = topo.above[layer];
            IdSpan<MaskId> all_comps = s.masks_of(b.comps);
            IdSpan<ItemId> all_items = s.items_of(b.frontier);
            comps.assign(all_comps.begin(), all_comps.end());
            frontier.assign(all_items.begin(), all_items.end());
        } else {
            assigned = s.mask(b.assigned);
            rest = topo.above[layer] | topo.layer_mask[layer].minus(assigned);
            Mask branch_fixed = s.mask(b.fixed);
            comps.clear();
            IdSpan<MaskId> all = s.masks_of(b.comps);
            for (size_t j = 0; j < all.size(); ++j)
                if (facts_.parents_of(all[j]).intersects(rest)) {
                    if (branch_fixed.test(static_cast<int>(j))) fixed.set(static_cast<int>(comps.size()));
                    comps.push_back(all[j]);
                }
            frontier.clear();
            for (ItemId item : s.items_of(b.frontier))
                if (facts_.parents_of(s.items[item].members).intersects(rest)) frontier.push_back(item);
        }
        if (full_) {
            if (b.layer_done()) return Key::full_done(layer, b.comps, b.frontier);
            return Key::full_inside(layer, b.assigned, s.mask(fixed), s.seq(comps), s.seq(frontier));
        }
        // the parts: per component, its frontier items and their union, sorted by first item
        parts_.clear();
        items_.clear();
        for (size_t index = 0; index < comps.size(); ++index) {
            Part part;
            part.members = s.mask(comps[index]);
            part.begin = items_.size();
            for (ItemId item : frontier) {
                const Mask& m = s.item_mask(item);
                if (m.intersects(part.members)) {
                    items_.push_back(item);
                    part.union_ |= m;
                }
            }
            part.end = items_.size();
            if (part.begin == part.end) throw std::logic_error("a component without a frontier cluster-layer");
            part.first = s.item_mask(items_[part.begin]);
            part.closure = &facts_.closure(comps[index]);
            part.fixed = fixed.test(static_cast<int>(index));
            parts_.push_back(part);
        }
        std::sort(parts_.begin(), parts_.end(), [](const Part& x, const Part& y) { return x.first < y.first; });
        const size_t count = parts_.size();
        outside_.resize(count);
        for (size_t i = 0; i < count; ++i)
            outside_[i] = parts_[i].closure->ancestors.minus(rest).minus(parts_[i].members);
        blocked_.assign((count * count + 63) / 64, 0);
        for (size_t i = 0; i < count; ++i) {
            const Closure<W>& ci = *parts_[i].closure;
            for (size_t j = i + 1; j < count; ++j) {
                const Closure<W>& cj = *parts_[j].closure;
                if (ci.layers.intersects(cj.layers) || ci.touch.intersects(parts_[j].members) ||
                    ci.descendants.intersects(outside_[j]) || cj.descendants.intersects(outside_[i])) {
                    size_t bit = i * count + j;
                    blocked_[bit >> 6] |= uint64_t{1} << (bit & 63);
                }
            }
        }
        Mask reach = reach_of(rest);
        shape_.clear();
        for (size_t i = 0; i < count; ++i) {
            shape_.push_back(s.mask(parts_[i].union_));
            shape_.push_back(s.mask(outside_[i] & reach));
        }
        SeqId shape = s.seq(shape_);
        BigMaskId blocked = s.bigmask(blocked_);
        if (b.layer_done()) return Key::lean_done(layer, b.frontier, shape, blocked);
        grouped_.clear();
        Mask sorted_fixed, held;
        for (size_t i = 0; i < count; ++i) {
            grouped_.insert(grouped_.end(), items_.begin() + parts_[i].begin, items_.begin() + parts_[i].end);
            if (parts_[i].fixed) {
                sorted_fixed.set(static_cast<int>(i));
                if (parts_[i].closure->layers.test(layer)) held.set(static_cast<int>(i));
            }
        }
        return Key::lean_inside(layer, b.assigned, s.mask(sorted_fixed), s.mask(held), s.seq(grouped_), shape,
                                blocked);
    }

    // search/linking.py's route: hash((head, blocked, *masks, *item masks)) % shards
    int route(const Key& key, int shards) const {
        if (shards == 1) return 0;
        const Store<W>& s = store_;
        PythonTupleHash h;
        auto mask_hash = [&](MaskId mask) { return python_int_hash(s.mask(mask).w.data(), W); };
        if (key.done()) {
            h.add(python_int_hash(key.layer));
        } else {
            PythonTupleHash head;
            head.add(python_int_hash(key.layer));
            head.add(mask_hash(key.assigned()));
            head.add(mask_hash(key.fixed()));
            if (key.lean()) head.add(mask_hash(key.held()));
            h.add(head.finish());
        }
        if (key.lean()) {
            auto words = s.bigmask(key.blocked());
            h.add(python_int_hash(words.data(), words.size()));
        } else {
            h.add(0);
        }
        for (MaskId m : s.masks_of(key.masks())) h.add(mask_hash(m));
        for (ItemId item : s.items_of(key.items())) h.add(mask_hash(s.items[item].members));
        return python_mod(h.finish(), shards);
    }

    size_t bytes() const { return reach_.size() * (sizeof(Mask) + 32); }

   private:
    struct Part {
        Mask first, members, union_;
        size_t begin = 0, end = 0;  // its items in items_
        const Closure<W>* closure = nullptr;
        bool fixed = false;
    };
    Store<W>& store_;
    const Topology<W>& topo_;
    NodeSetFacts<W>& facts_;
    bool full_;

   public:
    Key final_key;  // the key of a complete mapping (declared after what it is made of)

   private:
    std::unordered_map<MaskId, Mask> reach_;  // unplaced nodes -> their descendants
    std::vector<MaskId> comps_, shape_;
    std::vector<ItemId> frontier_, items_, grouped_;
    std::vector<Part> parts_;
    std::vector<Mask> outside_;
    std::vector<uint64_t> blocked_;

    Mask reach_of(const Mask& rest) {
        MaskId id = store_.mask(rest);
        auto found = reach_.find(id);
        if (found != reach_.end()) return found->second;
        Mask reach = topo_.union_of(topo_.desc, rest);
        reach_.emplace(id, reach);
        return reach;
    }
};

}  // namespace dcmap
