// The node-set facts the search reads over and over (the Python engine's Memo of
// parents_of, children_of and closures: search/problem.py), kept by mask id.
#pragma once

#include <unordered_map>

#include "bits.hpp"
#include "ids.hpp"
#include "store.hpp"
#include "topology.hpp"

namespace dcmap {

template <int W>
struct Closure {  // search/problem.py's closures_of: outside the set itself
    Bits<W> ancestors, descendants, touch, layers;
};

// The facts of a mask id: its parents and children, ORed over its nodes on demand (a few
// words per node: cheaper than any memo's probe), and its closure (asked of components
// only, kept by id).
template <int W>
class NodeSetFacts {
   public:
    using Mask = Bits<W>;

    NodeSetFacts(const Topology<W>& topo, const Store<W>& store) : topo_(topo), store_(store) {}

    Mask parents_of(MaskId mask) const { return topo_.union_of(topo_.parents, store_.mask(mask)); }
    Mask children_of(MaskId mask) const { return topo_.union_of(topo_.children, store_.mask(mask)); }
    const Closure<W>& closure(MaskId mask) {
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
    std::unordered_map<MaskId, Closure<W>> closures_;
};

}  // namespace dcmap
