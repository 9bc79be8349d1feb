// The words the explorer, the batches and the engine's face share: a completion on its way
// to its key's owner (Arrival), a better mapping found (Improvement), why a step ended
// (Reason): search/explorer.py's outbox, search/state.py's Improvement, limits.py's StepEnd
// and StopReason.
#pragma once

#include <cstdint>

#include "branch.hpp"
#include "ids.hpp"

namespace dcmap {

// why a step ended (the Python engine's StepEnd and StopReason); the codes are the binding's
enum class Reason : int {
    GOING = 0,
    IDLE = 1,
    BUDGET = 2,
    MAX_ITERATIONS = 3,
    TIME_LIMIT = 4,
    MEMORY_LIMIT = 5,
    INTERRUPTED = 6,
};

struct Improvement {  // search/state.py's Improvement, its trail as ids
    int64_t iteration;
    double seconds;
    double cost;
    int64_t link;  // the trail's record (NO_LINK: the root)
    SeqId joins;   // and its join masks
};

struct Arrival {  // a completion on its way to the owner of its key
    Key key;
    Branch branch;
};

}  // namespace dcmap
