// One problem's expansion, step for step as search/problem.py and search/combinations.py
// make it: the component proposed next, the feasible combinations of a proposal (the
// `merge` scheme's connected sets, the `single` scheme's subsets) and the child of each,
// scored, with the cost, bound and estimate memos; on a memo miss the Oracle asks Python.
// The floats are added in the Python engine's order, so every cost, bound and g_hat is
// the same double.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "bits.hpp"
#include "branch.hpp"
#include "dcmap_model.hpp"
#include "facts.hpp"
#include "ids.hpp"
#include "model_tables.hpp"
#include "oracle.hpp"
#include "store.hpp"
#include "tables.hpp"
#include "tolerance.hpp"
#include "topology.hpp"
#include "vocabulary.hpp"

namespace dcmap {

enum class Scheme { MERGE, SINGLE };

template <int W>
class Problem {
   public:
    using Mask = Bits<W>;

    Problem(Topology<W> topology, Scheme scheme, bool has_estimator, const Oracle& oracle)
        : topo(std::move(topology)), facts(topo, store), scheme_(scheme), has_estimator_(has_estimator),
          oracle_(oracle) {
        topo.check();
    }
    Problem(const Problem&) = delete;
    Problem& operator=(const Problem&) = delete;

    Topology<W> topo;
    Store<W> store;
    NodeSetFacts<W> facts;

    // The built-in model, natively (its messages are then node masks, held as mask ids).
    void use_model(const ModelTables& tables) { model_ = std::make_unique<DcmapModel<W>>(topo, tables); }
    bool has_model() const { return model_ != nullptr; }

    // Counts a step of a long inner loop; every 128, the limits (search/limits.py's
    // Stopwatch.check_within): Interrupted once one is reached.
    void check_within() {
        if (++inner_ % 128 == 0) {
            Reason reason = resources();
            if (reason != Reason::GOING) throw Interrupted(static_cast<int>(reason));
        }
    }
    Reason resources() {
        int reason = 0;
        if (oracle_.resources(oracle_.context, &reason) != 0) throw CallbackFailed();
        return static_cast<Reason>(reason);
    }

    // search/problem.py's next_proposal
    int next_proposal(const Branch& b) {
        if (b.layer_done()) return -1;  // nothing to propose (expand refuses it)
        Mask free = topo.layer_mask[b.layer].minus(store.mask(b.assigned));
        Mask fixed = store.mask(b.fixed);
        int best = -1, best_size = 0, best_count = 0;
        IdSpan<MaskId> comps = store.masks_of(b.comps);
        for (size_t idx = 0; idx < comps.size(); ++idx) {
            if (fixed.test(static_cast<int>(idx))) continue;
            int count = (facts.parents_of(comps[idx]) & free).count();
            if (count == 0) continue;
            int size = store.mask(comps[idx]).count();
            if (size > best_size || (size == best_size && count < best_count)) {
                best = static_cast<int>(idx);
                best_size = size;
                best_count = count;
            }
        }
        return best;
    }

    // search/problem.py's expand: the children of `b` for `proposal`, those whose bound
    // passes `g_min` dropped, into `children` (cleared first)
    void expand(const Branch& b, int proposal, double g_min, std::vector<Branch>& children) {
        children.clear();
        if (b.layer_done() || proposal < 0) throw std::logic_error("a branch with nothing to propose was expanded");
        Expansion& x = x_;
        x.layer = b.layer;
        x.frontier_id = b.frontier;
        IdSpan<MaskId> comps = store.masks_of(b.comps);
        IdSpan<ItemId> frontier = store.items_of(b.frontier);
        x.comps.assign(comps.begin(), comps.end());
        x.frontier.assign(frontier.begin(), frontier.end());
        x.free = topo.layer_mask[b.layer].minus(store.mask(b.assigned));
        x.below.clear();
        for (ItemId item : x.frontier)
            if (topo.layer_of_mask(store.item_mask(item)) < b.layer) x.below.push_back(item);
        Mask fixed = store.mask(b.fixed);
        x.unfixed.clear();
        for (size_t j = 0; j < x.comps.size(); ++j)
            if (!fixed.test(static_cast<int>(j))) x.unfixed.push_back({static_cast<int>(j), facts.parents_of(x.comps[j])});
        x.singles_known.clear();
        x.reach.clear();
        combinations(proposal, fixed);
        for (const auto& [joined, merged] : x.found) {
            Branch child;
            if (apply(b, proposal, fixed, joined, merged, g_min, child)) children.push_back(child);
        }
    }

    // The frontiers the bound memo's keys hold: marked live in a collection, then renumbered.
    void mark(std::vector<uint8_t>& live) const {
        for (size_t at = 0; at < bounds_.size(); ++at) live[bounds_.key(at).frontier.value()] = 1;
    }
    void renumber(const std::vector<SeqId>& renumbered) {
        bounds_.rewrite_keys([&](BoundKey k) {
            k.frontier = renumbered[k.frontier.value()];
            return k;
        });
        frontier_steps_.clear();  // keyed by sequence ids
        layer_steps_.clear();
    }

    size_t cost_memo_bytes() const { return cost_keys_.bytes() + cost_values_.capacity() * sizeof(CostValue); }
    size_t bound_memo_bytes() const { return bounds_.bytes(); }
    size_t estimate_memo_bytes() const { return estimates_.bytes(); }
    size_t cost_entries() const { return cost_values_.size(); }
    size_t bound_entries() const { return bounds_.size(); }

   private:
    static constexpr int FRONTIER_STEP_ITEMS = 4;  // a child's frontier from its parent's is cached up to this
    struct CostValue {
        double cost;
        ItemId item;
    };
    using CostKeyId = TypedId<CostValue>;  // a cost memo key's: its value's index
    struct BoundKey {  // (layer, assigned, frontier): assigned none when the layer is complete
        int32_t layer = 0;
        int32_t done = 0;
        Mask assigned;
        SeqId frontier = SeqId::none();
        bool operator==(const BoundKey& o) const {
            return layer == o.layer && done == o.done && frontier == o.frontier && assigned == o.assigned;
        }
        uint64_t hash() const {
            return mix64((static_cast<uint64_t>(static_cast<uint32_t>(layer)) << 33) ^ (static_cast<uint64_t>(done) << 32) ^
                         frontier.value()) ^ assigned.hash();
        }
    };
    struct RestKey {  // the nodes left: the estimate memo's key
        Mask rest;
        bool operator==(const RestKey& o) const { return rest == o.rest; }
        uint64_t hash() const { return rest.hash(); }
    };
    // a child's frontier from its parent's: (parent frontier, layer, complete or not, the
    // items added: the joined cluster-layer's, then each single's)
    struct FrontierStep {
        SeqId parent = SeqId::none();
        int32_t layer = 0;
        uint32_t done_and_count = 0;  // bit 31: the layer is complete; the rest: how many items added
        std::array<ItemId, FRONTIER_STEP_ITEMS> added{};
        bool operator==(const FrontierStep& o) const {
            return parent == o.parent && layer == o.layer && done_and_count == o.done_and_count && added == o.added;
        }
        uint64_t hash() const {
            uint64_t h = mix64((static_cast<uint64_t>(parent.value()) << 32) ^ static_cast<uint32_t>(layer) ^
                               (static_cast<uint64_t>(done_and_count) << 40));
            for (ItemId a : added) h = mix64(h ^ a.value());
            return h;
        }
    };
    // a new cluster-layer's cost and item in an expansion (its frontier and layer fix what it reads)
    struct LayerStep {
        SeqId frontier = SeqId::none();
        int32_t layer = 0;
        Mask nodes, cluster;
        bool operator==(const LayerStep& o) const {
            return frontier == o.frontier && layer == o.layer && nodes == o.nodes && cluster == o.cluster;
        }
        uint64_t hash() const {
            return mix64((static_cast<uint64_t>(frontier.value()) << 32) ^ static_cast<uint32_t>(layer)) ^ nodes.hash() ^
                   (cluster.hash() * 3);
        }
    };

    // what one expansion reads (search/problem.py's expand: `below`, `unfixed`, and its
    // per-expansion memos `single_costs` and `reach`), kept to be reused
    struct Expansion {
        int layer = 0;
        SeqId frontier_id = SeqId::none();  // the parent's frontier
        std::vector<MaskId> comps;
        std::vector<ItemId> frontier, below, added;
        Mask free;
        std::vector<std::pair<int, Mask>> unfixed;  // (index, parents) of each unfixed component
        std::vector<std::pair<int, CostValue>> singles_known;
        std::vector<std::pair<Mask, Mask>> reach;  // merged -> parents of the unfixed components outside it
        std::vector<std::pair<Mask, Mask>> found;  // the combinations (joined, merged)
        std::vector<int> open_idx;
        std::vector<const Closure<W>*> known;  // by component index
        std::vector<ItemId> scratch;
        std::vector<MaskId> new_comps, kept;
        std::vector<uint32_t> cost_key;
        std::vector<uint64_t> child_masks, item_masks;
        std::vector<uint32_t> child_messages, item_messages;
    };

    DirectCache<FrontierStep, SeqId, 16> frontier_steps_;
    DirectCache<LayerStep, CostValue, 16> layer_steps_;
    std::unique_ptr<DcmapModel<W>> model_;
    std::vector<typename DcmapModel<W>::Child> model_children_;
    std::vector<typename DcmapModel<W>::Item> model_items_;
    Scheme scheme_;
    bool has_estimator_;
    Oracle oracle_;
    Expansion x_;
    uint64_t inner_ = 0;
    SeqInterner<uint32_t, CostKeyId> cost_keys_;  // (nodes mask, same mask, child item, ...) as raw words
    std::vector<CostValue> cost_values_;
    FlatMap<BoundKey, double> bounds_;
    FlatMap<RestKey, double> estimates_;  // the nodes left -> the model's estimate

    // -- combinations (search/combinations.py) -------------------------------------------
    void combinations(int proposal, const Mask& fixed) {
        Expansion& x = x_;
        x.found.clear();
        MaskId members = x.comps[proposal];
        if (scheme_ == Scheme::SINGLE) {
            single_combos(proposal, members);
            return;
        }
        x.open_idx.clear();
        x.known.assign(x.comps.size(), nullptr);
        for (size_t i = 0; i < x.comps.size(); ++i)
            if (!fixed.test(static_cast<int>(i))) {
                x.open_idx.push_back(static_cast<int>(i));
                x.known[i] = &facts.closure(x.comps[i]);
            }
        const Closure<W>& own = *x.known[proposal];
        grow(Mask{}, Mask::bit(proposal), store.mask(members), own.layers, own.descendants, own.ancestors,
             facts.parents_of(members) & x.free, Mask{}, Mask{}, Mask::bit(proposal));
    }

    void single_combos(int proposal, MaskId members) {
        Expansion& x = x_;
        const Closure<W> c = facts.closure(members);
        Mask up = c.ancestors, down = c.descendants;
        Mask member_mask = store.mask(members);
        std::vector<int> z;
        (facts.parents_of(members) & x.free).each([&](int i) { z.push_back(i); });
        int n = static_cast<int>(z.size());
        std::vector<int> pick;
        for (int size = 0; size <= n; ++size) {  // itertools.combinations' order, size by size
            pick.resize(size);
            for (int k = 0; k < size; ++k) pick[k] = k;
            while (true) {
                check_within();
                Mask joined;
                for (int k : pick) joined.set(z[k]);
                if (joined.none() || violators(joined | member_mask, down, up, joined).none())
                    x.found.push_back({joined, Mask::bit(proposal)});
                int k = size - 1;
                while (k >= 0 && pick[k] == k + n - size) --k;
                if (k < 0) break;
                ++pick[k];
                for (int m = k + 1; m < size; ++m) pick[m] = pick[m - 1] + 1;
            }
        }
    }

    Mask violators(const Mask& union_, Mask down, Mask up, const Mask& joined) const {
        joined.each([&](int i) {
            down |= topo.desc[i];
            up |= topo.anc[i];
        });
        return (down & up).minus(union_);
    }

    // search/combinations.py's _grow (merged, cand_comps, banned_comps: bits over components)
    bool grow(const Mask& joined, const Mask& merged, const Mask& union_, const Mask& layers_used, const Mask& down,
              const Mask& up, Mask cand_nodes, Mask cand_comps, Mask banned_nodes, Mask banned_comps) {
        Expansion& x = x_;
        check_within();
        Mask breaking = violators(joined | union_, down, up, joined);
        if (breaking.any()) {
            Mask mendable;
            Mask gone = merged | banned_comps;
            for (int j : x.open_idx)
                if (!gone.test(j)) mendable |= store.mask(x.comps[j]);
            if (breaking.minus(mendable).any()) return false;
        } else {
            x.found.push_back({joined, merged});
        }
        while (cand_nodes.any() || cand_comps.any()) {
            if (cand_nodes.any()) {
                Mask low = cand_nodes.lowest_bit();
                cand_nodes ^= low;
                int i = low.lowest();
                Mask new_comps;
                Mask taken = merged | cand_comps | banned_comps;
                for (int j : x.open_idx)
                    if (!taken.test(j) && topo.children[i].intersects(store.mask(x.comps[j]))) new_comps.set(j);
                if (grow(joined | low, merged, union_, layers_used, down, up, cand_nodes, cand_comps | new_comps,
                         banned_nodes, banned_comps))
                    return true;
                banned_nodes |= low;
            } else {
                Mask bit = cand_comps.lowest_bit();
                cand_comps ^= bit;
                banned_comps |= bit;
                int j = bit.lowest();
                MaskId m = x.comps[j];
                const Closure<W>& k = *x.known[j];
                if (k.touch.intersects(union_) || k.layers.intersects(layers_used)) continue;
                Mask new_nodes = (facts.parents_of(m) & x.free).minus(joined | cand_nodes | banned_nodes);
                if (grow(joined, merged | bit, union_ | store.mask(m), layers_used | k.layers, down | k.descendants,
                         up | k.ancestors, cand_nodes | new_nodes, cand_comps, banned_nodes, banned_comps))
                    return true;
            }
        }
        return false;
    }

    // -- one child (search/problem.py's _apply) ----------------------------------------
    bool apply(const Branch& b, int proposal, const Mask& fixed_before, const Mask& joined, const Mask& merged,
               double g_min, Branch& child) {
        Expansion& x = x_;
        const int layer = b.layer;
        double cost = b.cost;
        std::vector<ItemId>& added = x.added;
        added.clear();
        Mask union_;
        if (joined.any()) {
            union_ = joined;
            merged.each([&](int j) { union_ |= store.mask(x.comps[j]); });
            CostValue c = new_cluster_layer(joined, union_);
            cost += c.cost;
            added.push_back(c.item);
        }
        Mask reachable = reach(merged);
        Mask singles = x.free.minus(joined).minus(reachable);
        singles.each([&](int i) {
            CostValue single = single_cost(i);
            cost += single.cost;
            added.push_back(single.item);
        });
        Mask assigned = store.mask(b.assigned) | joined | singles;
        const bool done = assigned == topo.layer_mask[layer];
        SeqId frontier_id = child_frontier(layer, done, added);
        double bound = cost + bound_of(layer, done, assigned, frontier_id);
        if (!within(bound, g_min)) return false;
        MaskId assigned_id = done ? LAYER_DONE : store.mask(assigned);
        SeqId joins = b.joins;
        Mask fixed;
        std::vector<MaskId>& comps = x.new_comps;
        comps.clear();
        if (joined.any()) {
            for (size_t j = 0; j < x.comps.size(); ++j)
                if (!merged.test(static_cast<int>(j))) {
                    if (fixed_before.test(static_cast<int>(j))) fixed.set(static_cast<int>(comps.size()));
                    comps.push_back(x.comps[j]);
                }
            fixed.set(static_cast<int>(comps.size()));
            comps.push_back(store.mask(union_));
            // anchor on a child of a joiner in each merged component (search/problem.py)
            Mask anchors = joined;
            Mask kids = facts.children_of(store.mask(joined));
            merged.each([&](int j) { anchors |= (store.mask(x.comps[j]) & kids).lowest_bit(); });
            if (anchors.many()) {
                IdSpan<MaskId> before = store.masks_of(b.joins);
                x.kept.assign(before.begin(), before.end());
                x.kept.push_back(store.mask(anchors));
                joins = store.seq(x.kept);
            }
        } else {
            fixed = fixed_before;
            fixed.set(proposal);
            comps.assign(x.comps.begin(), x.comps.end());
        }
        singles.each([&](int i) {
            fixed.set(static_cast<int>(comps.size()));
            comps.push_back(store.mask(Mask::bit(i)));
        });
        if (done) {
            comps_read_later(comps, layer);
            fixed = Mask{};
        }
        child.layer = layer;
        child.assigned = assigned_id;
        child.comps = store.seq(comps);
        child.frontier = frontier_id;
        child.cost = cost;
        child.joins = joins;
        child.link = b.link;
        child.fixed = store.mask(fixed);
        child.bound = bound;
        child.estimate = has_estimator_ ? cost + estimate_of(layer, done, assigned) : bound;
        return true;
    }

    // the child's frontier: the parent's with the items `added`, kept for later when the
    // layer is complete (search/problem.py's _apply)
    SeqId child_frontier(int layer, bool done, const std::vector<ItemId>& added) {
        Expansion& x = x_;
        FrontierStep step;
        bool cached = added.size() <= FRONTIER_STEP_ITEMS;
        if (cached) {
            step.parent = x.frontier_id;
            step.layer = layer;
            step.done_and_count = (done ? 0x80000000u : 0u) | static_cast<uint32_t>(added.size());
            std::copy(added.begin(), added.end(), step.added.begin());
            if (const SeqId* known = frontier_steps_.find(step)) return *known;
        }
        std::vector<ItemId>& frontier = x.scratch;
        frontier.assign(x.frontier.begin(), x.frontier.end());
        frontier.insert(frontier.end(), added.begin(), added.end());
        if (done) read_later(frontier, layer);
        SeqId id = store.seq(frontier);
        if (cached) frontier_steps_.put(step, id);
        return id;
    }

    Mask reach(const Mask& merged) {
        Expansion& x = x_;
        for (const auto& [key, value] : x.reach)
            if (key == merged) return value;
        Mask reachable;
        for (const auto& [j, parents] : x.unfixed)
            if (!merged.test(j)) reachable |= parents;
        x.reach.push_back({merged, reachable});
        return reachable;
    }

    CostValue single_cost(int i) {
        for (const auto& [node, value] : x_.singles_known)
            if (node == i) return value;
        CostValue value = new_cluster_layer(Mask::bit(i), Mask::bit(i));
        x_.singles_known.push_back({i, value});
        return value;
    }

    // the cost and item of a new cluster-layer `nodes` in cluster `cluster`, its children
    // the frontier cluster-layers of the expansion's `below` that hold a child of it
    CostValue new_cluster_layer(const Mask& nodes, const Mask& cluster) {
        Expansion& x = x_;
        LayerStep step{x.frontier_id, x.layer, nodes, cluster};
        if (const CostValue* known = layer_steps_.find(step)) return *known;
        CostValue value = priced(nodes, store.mask(nodes), cluster);
        layer_steps_.put(step, value);
        return value;
    }

    // new_cluster_layer's value, from the cost memo (or the Oracle on a miss)
    CostValue priced(const Mask& nodes, MaskId nodes_id, const Mask& cluster) {
        Expansion& x = x_;
        Mask kids = facts.children_of(nodes_id);
        Mask same;
        std::vector<uint32_t>& key = x.cost_key;  // (nodes mask id, same mask id, child item ids)
        key.assign({nodes_id.value(), 0});
        for (ItemId item : x.below) {
            const Mask& m = store.item_mask(item);
            if (m.intersects(kids)) {
                key.push_back(item.value());
                same |= m & cluster;
            }
        }
        key[1] = store.mask(same).value();
        CostKeyId id = cost_keys_.intern(std::span<const uint32_t>(key));
        if (id.value() < cost_values_.size()) return cost_values_[id.value()];
        if (model_) {  // a miss: the built-in model prices it natively, if its counts stay exact
            model_children_.clear();
            for (size_t k = 2; k < key.size(); ++k) {
                const Item& item = store.items[ItemId(key[k])];
                const Mask& m = store.mask(item.members);
                model_children_.push_back({m, store.mask(message_mask(item.message)), m.intersects(same)});
            }
            double cost = 0.0;
            Mask message;
            if (model_->evaluate(nodes, model_children_, cost, message) && cost > 0) {
                CostValue value{cost, store.item(nodes_id, coded_message(store.mask(message)))};
                cost_values_.push_back(value);
                return value;
            }
        }
        // a miss: the Python engine's _evaluate prices it
        size_t children = key.size() - 2;
        x.child_masks.resize(children * W);
        x.child_messages.resize(children);
        for (size_t k = 0; k < children; ++k) {
            const Item& item = store.items[ItemId(key[2 + k])];
            const Mask& m = store.mask(item.members);
            std::copy(m.w.begin(), m.w.end(), x.child_masks.begin() + k * W);
            x.child_messages[k] = item.message.value();
        }
        Mask same_mask = store.mask(MaskId(key[1]));
        double cost = 0.0;
        uint32_t message = 0;
        int answer = oracle_.cost(oracle_.context, nodes.w.data(), same_mask.w.data(), x.child_masks.data(),
                                  x.child_messages.data(), children, &cost, &message);
        if (answer > 0) throw Interrupted(answer);  // a limit reached after a slow call (Oracle)
        if (answer != 0) throw CallbackFailed();
        CostValue value{cost, store.item(nodes_id, MessageId(message))};
        cost_values_.push_back(value);
        return value;
    }

    double bound_of(int layer, bool done, const Mask& assigned, SeqId frontier) {
        BoundKey key;
        key.layer = layer;
        key.done = done;
        if (!done) key.assigned = assigned;
        key.frontier = frontier;
        if (const double* known = bounds_.find(key)) return *known;
        IdSpan<ItemId> items = store.items_of(frontier);
        if (model_) {
            model_items_.clear();
            for (ItemId k : items)
                model_items_.push_back({store.item_mask(k), store.mask(message_mask(store.items[k].message))});
            double value = 0.0;
            if (model_->bound(layer, done, key.assigned, model_items_, value)) {
                bounds_.at(key, value) = value;
                return value;
            }
        }
        Expansion& x = x_;
        x.item_masks.resize(items.size() * W);
        x.item_messages.resize(items.size());
        for (size_t k = 0; k < items.size(); ++k) {
            const Item& item = store.items[items[k]];
            const Mask& m = store.mask(item.members);
            std::copy(m.w.begin(), m.w.end(), x.item_masks.begin() + k * W);
            x.item_messages[k] = item.message.value();
        }
        double value = 0.0;
        if (oracle_.bound(oracle_.context, layer, done ? nullptr : key.assigned.w.data(), x.item_masks.data(),
                          x.item_messages.data(), items.size(), &value) != 0)
            throw CallbackFailed();
        bounds_.at(key, value) = value;
        return value;
    }

    double estimate_of(int layer, bool done, const Mask& assigned) {
        RestKey key{topo.above[layer]};
        if (!done) key.rest |= topo.layer_mask[layer].minus(assigned);
        if (const double* known = estimates_.find(key)) return *known;
        double value = 0.0;
        bool native = model_ && (key.rest.none() || model_->estimate(key.rest, value));  // none: 0, as Python's
        if (!native && oracle_.estimate(oracle_.context, key.rest.w.data(), &value) != 0) throw CallbackFailed();
        estimates_.at(key, value) = value;
        return value;
    }

    // search/problem.py's _read_later: the items with a parent above `layer`, by mask
    void read_later(std::vector<ItemId>& items, int layer) {
        const Mask above = topo.above[layer];
        size_t kept = 0;
        for (ItemId item : items)
            if (facts.parents_of(store.items[item].members).intersects(above)) items[kept++] = item;
        items.resize(kept);
        std::sort(items.begin(), items.end(),
                  [&](ItemId a, ItemId b) { return store.item_mask(a) < store.item_mask(b); });
    }

    // search/problem.py's _comps_read_later: the components with a parent above `layer`, sorted
    void comps_read_later(std::vector<MaskId>& comps, int layer) {
        const Mask above = topo.above[layer];
        size_t kept = 0;
        for (MaskId m : comps)
            if (facts.parents_of(m).intersects(above)) comps[kept++] = m;
        comps.resize(kept);
        std::sort(comps.begin(), comps.end(), [&](MaskId a, MaskId b) { return store.mask(a) < store.mask(b); });
    }
};

}  // namespace dcmap
