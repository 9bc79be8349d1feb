// SPEC section 3's tolerance (search/tolerance.py): two costs within a relative 1e-9 of
// each other are one cost, for pruning, linking and improvements alike.
#pragma once

namespace dcmap {

constexpr double TOLERANCE = 1e-9;

// search/tolerance.py's within: cost <= bound up to the relative tolerance
inline bool within(double cost, double bound) { return cost <= bound + TOLERANCE * (bound < 0 ? -bound : bound); }

}  // namespace dcmap
