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
#include "problem.hpp"
#include "python_hash.hpp"

namespace dcmap {

template <int W>
class LinkKeys {
   public:
    using Mask = Bits<W>;

    LinkKeys(Problem<W>& problem, bool full) : p_(problem), full_(full) {
        Store<W>& s = p_.store;
        final_key.layer = p_.topo.l_max;
        final_key.kind = full ? FULL_DONE : LEAN_DONE;
        final_key.a = s.empty_seq;
        final_key.b = s.empty_seq;
        final_key.c = full ? 0 : s.zero_words;
    }

    Key final_key;
    bool full() const { return full_; }

    Key of(const Branch& b) {
        Store<W>& s = p_.store;
        const Topology<W>& topo = p_.topo;
        const int layer = b.layer;
        Mask fixed;  // bit i: comps[i] is fixed at this layer
        Mask rest;
        std::vector<Id>& comps = comps_;
        std::vector<Id>& frontier = frontier_;
        Mask assigned;
        if (b.layer_done()) {
            rest = topo.above[layer];
            comps.assign(s.seq(b.comps).begin(), s.seq(b.comps).end());
            frontier.assign(s.seq(b.frontier).begin(), s.seq(b.frontier).end());
        } else {
            assigned = s.mask(b.assigned);
            rest = topo.above[layer] | topo.layer_mask[layer].minus(assigned);
            Mask branch_fixed = s.mask(b.fixed);
            comps.clear();
            auto all = s.seq(b.comps);
            for (size_t j = 0; j < all.size(); ++j)
                if (p_.facts.parents_of(all[j]).intersects(rest)) {
                    if (branch_fixed.test(static_cast<int>(j))) fixed.set(static_cast<int>(comps.size()));
                    comps.push_back(all[j]);
                }
            frontier.clear();
            for (Id item : s.seq(b.frontier))
                if (p_.facts.parents_of(s.items[item].members).intersects(rest)) frontier.push_back(item);
        }
        Key key;
        key.layer = layer;
        if (full_) {
            if (b.layer_done()) {
                key.kind = FULL_DONE;
                key.a = b.comps;
                key.b = b.frontier;
            } else {
                key.kind = FULL_INSIDE;
                key.a = b.assigned;
                key.b = s.mask(fixed);
                key.c = s.seq(comps);
                key.d = s.seq(frontier);
            }
            return key;
        }
        // the parts: per component, its frontier items and their union, sorted by first item
        parts_.clear();
        items_.clear();
        for (size_t index = 0; index < comps.size(); ++index) {
            Part part;
            part.members = s.mask(comps[index]);
            part.begin = items_.size();
            for (Id item : frontier) {
                const Mask& m = s.item_mask(item);
                if (m.intersects(part.members)) {
                    items_.push_back(item);
                    part.union_ |= m;
                }
            }
            part.end = items_.size();
            if (part.begin == part.end) throw std::logic_error("a component without a frontier cluster-layer");
            part.first = s.item_mask(items_[part.begin]);
            part.closure = &p_.facts.closure(comps[index]);
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
        Id shape = s.seq(shape_);
        Id blocked = s.bigmask(blocked_);
        if (b.layer_done()) {
            key.kind = LEAN_DONE;
            key.a = b.frontier;
            key.b = shape;
            key.c = blocked;
            return key;
        }
        grouped_.clear();
        Mask sorted_fixed, held;
        for (size_t i = 0; i < count; ++i) {
            grouped_.insert(grouped_.end(), items_.begin() + parts_[i].begin, items_.begin() + parts_[i].end);
            if (parts_[i].fixed) {
                sorted_fixed.set(static_cast<int>(i));
                if (parts_[i].closure->layers.test(layer)) held.set(static_cast<int>(i));
            }
        }
        key.kind = LEAN_INSIDE;
        key.a = b.assigned;
        key.b = s.mask(sorted_fixed);
        key.c = s.mask(held);
        key.d = s.seq(grouped_);
        key.e = shape;
        key.f = blocked;
        return key;
    }

    // search/linking.py's route: hash((head, blocked, *masks, *item masks)) % shards
    int route(const Key& key, int shards) const {
        if (shards == 1) return 0;
        const Store<W>& s = p_.store;
        PythonTupleHash h;
        auto mask_hash = [&](Id mask) { return python_int_hash(s.mask(mask).w.data(), W); };
        if (key.kind == LEAN_DONE || key.kind == FULL_DONE) {
            h.add(python_int_hash(key.layer));
        } else {
            PythonTupleHash head;
            head.add(python_int_hash(key.layer));
            head.add(mask_hash(key.a));
            head.add(mask_hash(key.b));
            if (key.kind == LEAN_INSIDE) head.add(mask_hash(key.c));
            h.add(head.finish());
        }
        Id masks, items;
        if (key.kind == LEAN_DONE || key.kind == LEAN_INSIDE) {
            Id blocked = key.kind == LEAN_DONE ? key.c : key.f;
            auto words = s.words.get(blocked);
            h.add(python_int_hash(words.data(), words.size()));
            masks = key.kind == LEAN_DONE ? key.b : key.e;
            items = key.kind == LEAN_DONE ? key.a : key.d;
        } else {
            h.add(0);
            masks = key.kind == FULL_DONE ? key.a : key.c;
            items = key.kind == FULL_DONE ? key.b : key.d;
        }
        for (Id m : s.seq(masks)) h.add(mask_hash(m));
        for (Id item : s.seq(items)) h.add(mask_hash(s.items[item].members));
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
    Problem<W>& p_;
    bool full_;
    std::unordered_map<Id, Mask> reach_;  // unplaced nodes -> their descendants
    std::vector<Id> comps_, frontier_, items_, shape_, grouped_;
    std::vector<Part> parts_;
    std::vector<Mask> outside_;
    std::vector<uint64_t> blocked_;

    Mask reach_of(const Mask& rest) {
        Id id = p_.store.mask(rest);
        auto found = reach_.find(id);
        if (found != reach_.end()) return found->second;
        Mask reach = p_.topo.union_of(p_.topo.desc, rest);
        reach_.emplace(id, reach);
        return reach;
    }
};

}  // namespace dcmap
