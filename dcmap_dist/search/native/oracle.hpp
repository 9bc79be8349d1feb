// What the native search asks of Python: the cost model on a cost-memo miss, the lower
// bound on a bound-memo miss, the model's estimate of the nodes left on an estimate-memo
// miss (each computed by the Python engine's own code, so every float is the same), and
// whether a limit of the search's stopwatch is reached. Each callback returns 0, or -1
// when Python raised (the binding keeps the exception and raises it again once the
// search has unwound with CallbackFailed). The cost callback may also return a reason's
// code (> 0): a limit was reached after a slow call, the expansion stops as Interrupted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>

namespace dcmap {

struct Oracle {
    void* context = nullptr;
    // the cost and the message id of cluster-layer `nodes` in a cluster whose members among
    // its children are `same`, given its children (masks and message ids, in order)
    int (*cost)(void* context, const uint64_t* nodes, const uint64_t* same, const uint64_t* child_masks,
                const uint32_t* child_messages, size_t children, double* cost, uint32_t* message) = nullptr;
    // the bound at (layer, assigned, frontier); `assigned` null: the layer is complete
    int (*bound)(void* context, int layer, const uint64_t* assigned, const uint64_t* item_masks,
                 const uint32_t* item_messages, size_t items, double* bound) = nullptr;
    // the model's estimate of the cost of the nodes `rest`
    int (*estimate)(void* context, const uint64_t* rest, double* estimate) = nullptr;
    // a limit reached (time, memory, an interrupt): its reason's code (0: none)
    int (*resources)(void* context, int* reason) = nullptr;
};

// Python raised in a callback: the step unwinds and the binding raises it again.
struct CallbackFailed : std::exception {
    const char* what() const noexcept override { return "a callback into Python raised"; }
};

// A limit was reached in the middle of an expansion (search/limits.py's SearchInterrupted).
struct Interrupted : std::exception {
    int reason;
    explicit Interrupted(int r) : reason(r) {}
    const char* what() const noexcept override { return "a limit was reached inside an expansion"; }
};

}  // namespace dcmap
