// A network's structure as the search reads it (model/topology.py's Topology), handed
// over by the binding, and the node-set facts the search reads over and over (the Python
// engine's Memo of parents_of, children_of and closures), kept by mask id.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "bits.hpp"
#include "store.hpp"

namespace dcmap {

template <int W>
struct Closure {  // search/problem.py's closures_of: outside the set itself
    Bits<W> ancestors, descendants, touch, layers;
};

template <int W>
class Topology {
   public:
    using Mask = Bits<W>;

    int n = 0;
    int l_max = 0;
    std::vector<int> layer;  // by node
    std::vector<Mask> parents, children, neighbours, anc, desc;  // by node
    std::vector<Mask> layer_mask, above;  // by layer

    void check() const {
        if (n < 1 || n > 64 * W) throw std::invalid_argument("a topology of 1 to 64 * W nodes expected");
        size_t size = static_cast<size_t>(n);
        if (layer.size() != size || parents.size() != size || children.size() != size || neighbours.size() != size ||
            anc.size() != size || desc.size() != size)
            throw std::invalid_argument("per-node tables of another length than the nodes");
        if (layer_mask.size() != static_cast<size_t>(l_max) + 1 || above.size() != layer_mask.size())
            throw std::invalid_argument("per-layer tables of another length than the layers");
        for (int l : layer)
            if (l < 0 || l > l_max) throw std::invalid_argument("a node's layer out of range");
    }

    int layer_of_mask(const Mask& m) const {  // of a cluster-layer's lowest node
        int low = m.lowest();
        if (low < 0) throw std::invalid_argument("an empty cluster-layer");
        return layer[low];
    }

    Mask union_of(const std::vector<Mask>& table, const Mask& m) const {
        Mask out;
        m.each([&](int i) { out |= table[i]; });
        return out;
    }
};

// The facts of a mask id: its parents and children, ORed over its nodes on demand (a few
// words per node: cheaper than any memo's probe), and its closure (asked of components
// only, kept by id).
template <int W>
class NodeSetFacts {
   public:
    using Mask = Bits<W>;

    NodeSetFacts(const Topology<W>& topo, const Store<W>& store) : topo_(topo), store_(store) {}

    Mask parents_of(Id mask) const { return topo_.union_of(topo_.parents, store_.mask(mask)); }
    Mask children_of(Id mask) const { return topo_.union_of(topo_.children, store_.mask(mask)); }
    const Closure<W>& closure(Id mask) {
        auto found = closures_.find(mask);
        if (found != closures_.end()) return found->second;
        const Mask m = store_.mask(mask);
        Closure<W> c;
        m.each([&](int i) {
            c.ancestors |= topo_.anc[i];
            c.descendants |= topo_.desc[i];
            c.touch |= topo_.neighbours[i];
            c.layers.set(topo_.layer[i]);
        });
        c.ancestors = c.ancestors.minus(m);
        c.descendants = c.descendants.minus(m);
        c.touch = c.touch.minus(m);
        return closures_.emplace(mask, c).first->second;
    }
    size_t bytes() const { return closures_.size() * (sizeof(Closure<W>) + 32); }

   private:
    const Topology<W>& topo_;
    const Store<W>& store_;
    std::unordered_map<Id, Closure<W>> closures_;
};

}  // namespace dcmap
