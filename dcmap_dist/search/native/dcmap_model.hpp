// The built-in `dcmap` cost model (cost/dcmap.py's DcmapCost) and the bound the search
// prunes with (search/bounds.py's LowerBound over the model's hooks), natively: the same
// integer counts, the same floats added in the same order, so every cost, bound and
// estimate is the Python engine's double. Table sizes are exact integers; a size past
// 2^53 (where a double stops holding every integer) makes the model decline, and the
// engine asks Python instead, as it does for any other model.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "bits.hpp"
#include "model_tables.hpp"
#include "topology.hpp"

namespace dcmap {

constexpr uint64_t EXACT = uint64_t{1} << 53;  // every integer up to here is a double

template <int W>
class DcmapModel {
   public:
    using Mask = Bits<W>;

    struct Child {  // a child cluster-layer: its nodes, its message (a node set), same cluster or not
        Mask nodes, message;
        bool same;
    };
    struct Item {  // a frontier cluster-layer for the bound
        Mask nodes, message;
    };
    using Front = std::vector<std::pair<double, double>>;  // grouping trade-offs (excess, absorptions), excess ascending

    // The model of `tables` (model_tables.hpp), checked against the network and read once:
    // the absorbers' children into masks.
    DcmapModel(const Topology<W>& topo, const ModelTables& tables) : topo_(topo), d_(tables) {
        size_t n = static_cast<size_t>(topo.n), layers = topo.layer_mask.size();
        if (d_.cards.size() != n || d_.name_rank.size() != n || d_.eliminate_rank.size() != n ||
            d_.naive_rank.size() != n || d_.own.size() != n || d_.absorbed.size() != n || d_.above.size() != layers ||
            d_.absorbing_kids.size() != layers || d_.absorbing_charges.size() != layers || d_.additive.size() != n ||
            d_.spread.size() != n * W)
            throw std::invalid_argument("the model's tables are of the wrong sizes");
        for (uint64_t card : d_.cards)
            if (card < 1 || card > EXACT) throw std::invalid_argument("a node's card out of range");
        // Bell(10) partitions, 2^16 subsets: past them a bound would cost more than it saves
        if (d_.most_grouped > 10 || d_.most_partitioned > 16) throw std::invalid_argument("the bound's caps");
        for (size_t c = 0; c <= d_.most_grouped; ++c) partitions_.push_back(partitions_from(static_cast<int>(c), 0));
        absorbing_.resize(layers);
        for (size_t l = 0; l < layers; ++l) {
            const std::vector<uint64_t>& kids = d_.absorbing_kids[l];
            if (kids.size() != d_.absorbing_charges[l].size() * W) throw std::invalid_argument("absorbers' masks");
            for (size_t k = 0; k < d_.absorbing_charges[l].size(); ++k) {
                Mask mask;
                for (int j = 0; j < W; ++j) mask.w[j] = kids[k * W + j];
                absorbing_[l].push_back({mask, d_.absorbing_charges[l][k]});
            }
        }
        spread_.resize(n);
        for (size_t x = 0; x < n; ++x)
            for (int j = 0; j < W; ++j) spread_[x].w[j] = d_.spread[x * W + j];
        for (int x = 0; x < topo_.n; ++x) {
            by_eliminate_.push_back(x);
            by_naive_.push_back(x);
        }
        std::sort(by_eliminate_.begin(), by_eliminate_.end(),
                  [&](int a, int b) { return d_.eliminate_rank[a] < d_.eliminate_rank[b]; });
        std::sort(by_naive_.begin(), by_naive_.end(), [&](int a, int b) { return d_.naive_rank[a] < d_.naive_rank[b]; });
    }

    // DcmapCost.evaluate: false if a count passes 2^53 (ask Python)
    bool evaluate(const Mask& nodes, std::span<const Child> children, double& cost, Mask& message) const {
        const double add = d_.addition;
        Mask jcpt = this->jcpt(nodes);
        Mask link;
        for (const Child& c : children)
            if (!c.same) link |= topo_.union_of(topo_.parents, c.nodes) & nodes;
        Mask scope;
        double total = 0.0;
        auto order = child_order(nodes, children);
        if (!order) return false;  // a child no cluster-layer holds: Python says what is wrong
        for (int k : *order) {
            const Mask& m = children[k].message;
            Mask kept = m & jcpt;
            auto all = size(m), held = size(kept);
            if (!all || !held) return false;
            total += weighted(add, *all - *held);
            scope |= kept;
            auto s = size(scope);
            if (!s) return false;
            total += static_cast<double>(*s);
        }
        for (int x : by_eliminate_) {
            if (!nodes.test(x)) continue;
            scope.set(x);
            scope |= topo_.parents[x];
            auto s = size(scope);
            if (!s) return false;
            total += static_cast<double>(*s);
            if (!link.test(x)) {
                total += weighted(sum_out_weight(add, d_.cards[x]), *s);
                scope = scope.minus(Mask::bit(x));
            }
        }
        cost = total;
        message = scope;
        return true;
    }

    // DcmapCost.naive (its estimate) of the nodes `rest`
    bool estimate(const Mask& rest, double& out) const {
        Mask scope;
        double total = 0.0;
        for (int x : by_naive_) {
            if (!rest.test(x)) continue;
            scope.set(x);
            scope |= topo_.parents[x];
            auto s = size(scope);
            if (!s) return false;
            total += static_cast<double>(*s) + weighted(sum_out_weight(d_.addition, d_.cards[x]), *s);
            scope = scope.minus(Mask::bit(x));
        }
        out = total;
        return true;
    }

    // LowerBound.compute at (layer, assigned (none if `done`), frontier)
    bool bound(int layer, bool done, const Mask& assigned, std::span<const Item> frontier, double& out) {
        if (!d_.bounds) {
            out = 0.0;
            return true;
        }
        double b = d_.above[layer];
        Mask rest = topo_.above[layer];
        if (!done) {
            Mask unplaced = topo_.layer_mask[layer].minus(assigned);
            rest |= unplaced;
            b += unplaced_part(unplaced);
        }
        Mask next = next_layer(rest);
        given_.clear();
        fronts_.clear();
        for (size_t k = 0; k < frontier.size(); ++k) {
            Mask parents = topo_.union_of(topo_.parents, frontier[k].nodes) & rest;
            for (Mask left = parents; left.any();) {  // the first of each layer absorbs the message
                int x = left.lowest();
                auto at = std::find_if(given_.begin(), given_.end(), [&](const auto& g) { return g.first == x; });
                if (at == given_.end())
                    given_.push_back({x, {k}});
                else
                    at->second.push_back(k);
                left = left.minus(topo_.layer_mask[topo_.layer[x]]);
            }
            Mask shared = parents & next;
            if (shared.many()) {
                auto front = grouping_trade_offs(frontier[k], shared);
                if (!front) return false;
                fronts_.push_back(std::move(*front));
            }
        }
        double nearby = 0.0;  // the next layer's part: its absorbers' absorptions and the groupings
        for (const auto& [x, items] : given_) {
            auto value = absorption_bound(x, frontier, items);
            if (!value) return false;
            if (next.test(x))
                nearby += *value;
            else
                b += *value;
        }
        if (!fronts_.empty()) nearby += least_grouping(fronts_);
        if (next.any()) {  // the next layer's unplaced nodes, split the cheapest way
            auto whole = layer_bound(frontier, next);
            if (!whole) return false;
            if (*whole > nearby) nearby = *whole;
        }
        out = b + nearby;
        return true;
    }

   private:
    const Topology<W>& topo_;
    const ModelTables d_;
    std::vector<std::vector<std::pair<Mask, double>>> absorbing_;  // per layer, (children there, charge) of each absorber
    std::vector<int> by_eliminate_, by_naive_;
    std::vector<Mask> spread_;   // per node, the parents its additive absorbed part is spread over
    std::vector<Front> fronts_;  // bound's grouping trade-offs, per frontier item with parents to group
    // every partition of c elements into groups (bits), c up to the most grouped, in the
    // order cost/dcmap.py's _set_partitions yields them (Bell(8) = 4140 at 8)
    std::vector<std::vector<std::vector<uint32_t>>> partitions_;
    std::vector<std::pair<int, std::vector<size_t>>> given_;  // absorber -> its frontier items, first met first

    // Jcpt: the nodes and their parents (what a cluster-layer of them keeps of an absorbed message)
    Mask jcpt(const Mask& nodes) const { return nodes | topo_.union_of(topo_.parents, nodes); }

    // |S|, the product of the nodes' cards; none past 2^53
    std::optional<uint64_t> size(const Mask& nodes) const {
        unsigned __int128 product = 1;
        bool over = false;
        nodes.each([&](int x) {
            product *= d_.cards[x];
            if (product > EXACT) over = true, product = EXACT + 1;
        });
        if (over) return std::nullopt;
        return static_cast<uint64_t>(product);
    }
    static double weighted(double weight, uint64_t count) { return weight != 0.0 ? weight * static_cast<double>(count) : 0.0; }
    static double sum_out_weight(double addition, uint64_t card) {
        return addition * static_cast<double>(card - 1) / static_cast<double>(card);
    }
    // cost/dcmap.py's _least_absorption: the least of a(|J| - m) + m at m's two ends
    static double least_absorption(double add, uint64_t size, uint64_t least, uint64_t most) {
        double low = weighted(add, size - least) + static_cast<double>(least);
        double high = weighted(add, size - most) + static_cast<double>(most);
        return high < low ? high : low;
    }

    // cost/base.py's child_order: children in order of first appearance, node by node
    // (input order, or by name for the canonical order) and each node's children likewise
    std::optional<std::vector<int>> child_order(const Mask& nodes, std::span<const Child> children) const {
        std::vector<int> xs;
        nodes.each([&](int x) { xs.push_back(x); });
        if (d_.canonical) std::sort(xs.begin(), xs.end(), [&](int a, int b) { return d_.name_rank[a] < d_.name_rank[b]; });
        std::vector<int> order;
        std::vector<uint8_t> seen(children.size(), 0);
        std::vector<int> ys;
        for (int x : xs) {
            ys.clear();
            topo_.children[x].each([&](int y) { ys.push_back(y); });
            if (d_.canonical) std::sort(ys.begin(), ys.end(), [&](int a, int b) { return d_.name_rank[a] < d_.name_rank[b]; });
            for (int y : ys) {
                size_t k = 0;
                while (k < children.size() && !children[k].nodes.test(y)) ++k;
                if (k == children.size()) return std::nullopt;
                if (!seen[k]) {
                    seen[k] = 1;
                    order.push_back(static_cast<int>(k));
                }
            }
        }
        return order;
    }

    Mask next_layer(const Mask& rest) const {
        for (const Mask& m : topo_.layer_mask)
            if (m.intersects(rest)) return rest & m;
        return Mask{};
    }

    double unplaced_part(const Mask& unplaced) const {
        if (unplaced.none()) return 0.0;
        int layer = topo_.layer[unplaced.lowest()];
        double own = 0.0, charges = 0.0, absorbed = -std::numeric_limits<double>::infinity();
        bool first = true;
        unplaced.each([&](int i) {
            own += d_.own[i];
            if (first || d_.absorbed[i] > absorbed) absorbed = d_.absorbed[i];
            first = false;
        });
        for (const auto& [kids, charge] : absorbing_[layer])
            if (kids.intersects(unplaced)) charges += charge;
        return own + charges + std::max(absorbed, additive_part(unplaced));
    }

    // LowerBound.additive_part: the greedy set of spread parents, largest parts first
    double additive_part(const Mask& unplaced) const {
        std::vector<int> members;
        unplaced.each([&](int i) { members.push_back(i); });
        std::stable_sort(members.begin(), members.end(),
                         [&](int a, int b) { return d_.additive[a] > d_.additive[b]; });
        struct Subset {
            uint64_t total;
            Mask nodes;
        };
        std::vector<Subset> subsets{{0, Mask{}}};
        std::vector<int> chosen;
        for (int y : members) {
            if (!(d_.additive[y] > 0.0) || chosen.size() == d_.most_added) break;
            // a size past 2^53 passes every sum of sizes (each below 2^43, at most 10)
            uint64_t own = size(spread_[y]).value_or(EXACT + 1);
            bool fits = true;
            for (const Subset& s : subsets)
                if (s.total + own > size(s.nodes | spread_[y]).value_or(EXACT + 1)) {
                    fits = false;
                    break;
                }
            if (!fits) continue;
            chosen.push_back(y);
            for (size_t k = 0, count = subsets.size(); k < count; ++k)
                subsets.push_back({subsets[k].total + own, subsets[k].nodes | spread_[y]});
        }
        double total = 0.0;
        for (int y : chosen) total += d_.additive[y];
        return total;
    }

    // DcmapCost.absorption_lower_bound for absorber x and the frontier items `items`, in order
    std::optional<double> absorption_bound(int x, std::span<const Item> frontier, const std::vector<size_t>& items) const {
        const double add = d_.addition;
        std::vector<int> near{x};  // x, then its parents, in order: bit k of a `shared` is near[k]
        topo_.parents[x].each([&](int p) { near.push_back(p); });
        auto scope = [&](uint64_t shared) -> std::optional<uint64_t> {
            Mask m;
            for (size_t k = 0; k < near.size(); ++k)
                if (shared >> k & 1) m.set(near[k]);
            return size(m);
        };
        struct Absorption {
            double alone, marginalise;
            uint64_t shared;
        };
        std::vector<Absorption> absorptions;
        uint64_t union_ = 0;
        for (size_t k : items) {
            const Item& item = frontier[k];
            auto whole = size(item.message), most = size(item.message.minus(item.nodes));
            uint64_t shared = 0;
            for (size_t j = 0; j < near.size(); ++j)
                if (item.message.test(near[j])) shared |= uint64_t{1} << j;
            auto kept = scope(shared);
            if (!whole || !most || !kept || near.size() > 63) return std::nullopt;
            absorptions.push_back({least_absorption(add, *whole, *kept, *most), weighted(add, *whole - *most), shared});
            union_ |= shared;
        }
        auto all = scope(union_);
        if (!all) return std::nullopt;
        bool apart = absorptions.size() > d_.most_ordered;
        if (!apart) {
            apart = true;
            for (const Absorption& a : absorptions)
                if (!(a.marginalise + static_cast<double>(*all) <= a.alone)) apart = false;
        }
        if (apart) {
            double total = 0.0;
            for (const Absorption& a : absorptions) total += a.alone;
            return total;
        }
        size_t count = absorptions.size();
        std::vector<double> least(size_t{1} << count, 0.0);
        std::vector<uint64_t> held(size_t{1} << count, 0);
        for (size_t subset = 1; subset < (size_t{1} << count); ++subset) {
            size_t low = subset & (~subset + 1);
            held[subset] = held[subset ^ low] | absorptions[std::countr_zero(low)].shared;
            double best = std::numeric_limits<double>::infinity();
            for (size_t i = 0; i < count; ++i) {
                if (!(subset >> i & 1)) continue;
                size_t before = subset ^ (size_t{1} << i);
                auto s = scope(held[before] | absorptions[i].shared);
                if (!s) return std::nullopt;
                double in = absorptions[i].marginalise + static_cast<double>(*s);
                double cost = in > absorptions[i].alone ? in : absorptions[i].alone;
                double total = least[before] + cost;
                if (total < best) best = total;
            }
            least[subset] = best;
        }
        return least.back();
    }

    // cost/dcmap.py's _grouping_excess for the nodes `group` of one layer: each node, eliminated
    // in the elimination order, finds the later ones in the scope (cpt(z) (|later| - 1))
    std::optional<double> grouping_excess(const Mask& group) const {
        std::vector<int> ordered;
        group.each([&](int x) { ordered.push_back(x); });
        std::sort(ordered.begin(), ordered.end(), [&](int a, int b) { return d_.eliminate_rank[a] < d_.eliminate_rank[b]; });
        unsigned __int128 total = 0;
        Mask later = group;
        for (int z : ordered) {
            later = later.minus(Mask::bit(z));
            auto cpt = size(topo_.parents[z] | Mask::bit(z)), rest = size(later);
            if (!cpt || !rest) return std::nullopt;
            total += static_cast<unsigned __int128>(*cpt) * (*rest - 1);
            if (total > EXACT) return std::nullopt;
        }
        return static_cast<double>(static_cast<uint64_t>(total));
    }

    // DcmapCost.grouping_trade_offs for a frontier item with two or more unplaced parents
    // `shared` in the next layer to build
    std::optional<Front> grouping_trade_offs(const Item& item, const Mask& shared) const {
        std::vector<int> parents;
        shared.each([&](int p) { parents.push_back(p); });
        size_t count = parents.size();
        if (count > d_.most_grouped) return Front{{0.0, 0.0}};
        auto whole = size(item.message), most = size(item.message.minus(item.nodes));
        if (!whole || !most) return std::nullopt;
        // each group's part (a group as bits over `parents`): its excess, its absorption
        std::vector<std::pair<double, double>> part(size_t{1} << count, {0.0, 0.0});
        for (uint32_t g = 1; g < (uint32_t{1} << count); ++g) {
            Mask group, near;
            for (size_t k = 0; k < count; ++k)
                if (g >> k & 1) group.set(parents[k]);
            auto excess = grouping_excess(group);
            if (!excess) return std::nullopt;
            if (g & 1) {  // it holds the first parent, whose absorption is charged elsewhere
                part[g] = {*excess, 0.0};
                continue;
            }
            near = jcpt(group);
            auto kept = size(item.message & near);
            if (!kept) return std::nullopt;
            part[g] = {*excess, least_absorption(d_.addition, *whole, *kept, *most)};
        }
        // every partition's pair, in cost/dcmap.py's _set_partitions order, sorted; then
        // the pairs no other beats in absorptions
        Front pairs;
        for (const std::vector<uint32_t>& groups : partitions_[count]) {
            double excess = 0.0, absorptions = 0.0;
            for (uint32_t g : groups) excess += part[g].first;
            for (uint32_t g : groups) absorptions += part[g].second;
            pairs.push_back({excess, absorptions});
        }
        std::sort(pairs.begin(), pairs.end());
        Front front{pairs.front()};
        for (const auto& pair : pairs)
            if (pair.second < front.back().second) front.push_back(pair);
        return front;
    }

    // DcmapCost.layer_lower_bound for the frontier items with parents in `layer`, the
    // unplaced nodes of the next layer to build
    std::optional<double> layer_bound(std::span<const Item> frontier, const Mask& layer) const {
        struct Kid {
            Mask parents, message;
            uint64_t size, most;
        };
        std::vector<Kid> kids;
        for (const Item& item : frontier) {
            Mask parents = topo_.union_of(topo_.parents, item.nodes) & layer;
            if (parents.none()) continue;
            auto whole = size(item.message), most = size(item.message.minus(item.nodes));
            if (!whole || !most) return std::nullopt;
            kids.push_back({parents, item.message, *whole, *most});
        }
        // the parents, in groups linked by a child, in the order of their first node
        std::vector<Mask> groups;
        Mask seen;
        layer.each([&](int x) {
            if (seen.test(x)) return;
            Mask group;
            for (const Kid& kid : kids)
                if (kid.parents.test(x)) group |= kid.parents;
            if (group.none()) return;
            for (bool grew = true; grew;) {
                grew = false;
                for (const Kid& kid : kids)
                    if (kid.parents.intersects(group) && kid.parents.minus(group).any()) group |= kid.parents, grew = true;
            }
            seen |= group;
            groups.push_back(group);
        });
        double total = 0.0;
        for (const Mask& group : groups) {
            std::vector<int> members;
            group.each([&](int x) { members.push_back(x); });
            size_t count = members.size();
            if (count > d_.most_partitioned) continue;
            std::vector<double> part(size_t{1} << count, 0.0), least(size_t{1} << count, 0.0);
            for (uint32_t subset = 1; subset < (uint32_t{1} << count); ++subset) {
                Mask nodes;
                for (size_t k = 0; k < count; ++k)
                    if (subset >> k & 1) nodes.set(members[k]);
                Mask near = jcpt(nodes);
                double value = 0.0;
                for (const Kid& kid : kids)
                    if (kid.parents.intersects(nodes)) {
                        auto kept = size(kid.message & near);
                        if (!kept) return std::nullopt;
                        value += least_absorption(d_.addition, kid.size, *kept, kid.most);
                    }
                auto excess = grouping_excess(nodes);
                if (!excess) return std::nullopt;
                part[subset] = value + *excess;
            }
            for (uint32_t subset = 1; subset < (uint32_t{1} << count); ++subset) {
                uint32_t low = subset & (~subset + 1), others = subset ^ low;
                double best = std::numeric_limits<double>::infinity();
                for (uint32_t sub = others;; sub = (sub - 1) & others) {  // the lowest node's cluster-layer, and the rest
                    double value = part[sub | low] + least[others ^ sub];
                    if (value < best) best = value;
                    if (!sub) break;
                }
                least[subset] = best;
            }
            total += least.back();
        }
        return total;
    }

    // search/bounds.py's least_grouping: the least over t (each excess met) of t plus, per
    // front, its least absorptions with an excess of at most t
    static double least_grouping(const std::vector<Front>& fronts) {
        std::vector<double> ts;
        for (const Front& front : fronts)
            for (const auto& pair : front) ts.push_back(pair.first);
        std::sort(ts.begin(), ts.end());
        ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
        double best = std::numeric_limits<double>::infinity();
        for (double t : ts) {
            double total = t;
            for (const Front& front : fronts) {
                double least = std::numeric_limits<double>::infinity();
                for (const auto& [excess, absorptions] : front) {
                    if (excess > t) break;
                    least = absorptions;
                }
                total += least;
            }
            if (total < best) best = total;
        }
        return best;
    }

    static std::vector<std::vector<uint32_t>> partitions_from(int count, int from) {
        if (from == count) return {{}};
        std::vector<std::vector<uint32_t>> out;
        for (const std::vector<uint32_t>& rest : partitions_from(count, from + 1)) {
            std::vector<uint32_t> p{uint32_t{1} << from};
            p.insert(p.end(), rest.begin(), rest.end());
            out.push_back(p);
            for (size_t i = 0; i < rest.size(); ++i) {
                p.assign(rest.begin(), rest.end());
                p[i] |= uint32_t{1} << from;
                out.push_back(p);
            }
        }
        return out;
    }
};

}  // namespace dcmap
