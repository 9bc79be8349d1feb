// The built-in `dcmap` cost model's tables and its bound's parts, as the binding hands them
// over (search/core.py: the record the core takes; model/ and search/bounds.py compute
// them), masks as little-endian 64-bit words. dcmap_model.hpp checks them against the
// network and reads them once into its own masks.
#pragma once

#include <cstdint>
#include <vector>

namespace dcmap {

// What the model needs of the network, in the component's node order (which must be the
// whole network's: the binding gives the model only to a network of one component).
struct ModelTables {
    std::vector<uint64_t> cards;      // by node: the states it counts (1 if observed)
    std::vector<int> name_rank;       // by node: its rank by name (the canonical order's)
    std::vector<int> eliminate_rank;  // by node: elimination_positions' order
    std::vector<int> naive_rank;      // by node: (layer, elimination position), DcmapCost.naive's order
    bool canonical = false;
    double addition = 0.6;
    // the bound's parts (search/bounds.py): per layer, the bound of the layers above it; per
    // node, its own part and its absorbed part; per layer, (children there, charge) of each
    // absorber, the children's masks as `words` words each; per node, its additive absorbed
    // part and the parents it is spread over (`words` words each)
    bool bounds = true;
    std::vector<double> above, own, absorbed;
    std::vector<std::vector<uint64_t>> absorbing_kids;
    std::vector<std::vector<double>> absorbing_charges;
    std::vector<double> additive;
    std::vector<uint64_t> spread;
    // the caps, as the Python engine's (search/core.py's model_tables passes them): the most
    // nodes whose additive parts are added up (bounds.MOST_ADDED), and cost/dcmap.py's most
    // parents grouped every way, absorptions ordered every way, parents of a linked group
    // split every way
    size_t most_added = 0, most_grouped = 0, most_ordered = 0, most_partitioned = 0;
};

}  // namespace dcmap
