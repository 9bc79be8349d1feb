// A network's structure as the search reads it (model/topology.py's Topology), handed
// over by the binding.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "bits.hpp"

namespace dcmap {

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

}  // namespace dcmap
