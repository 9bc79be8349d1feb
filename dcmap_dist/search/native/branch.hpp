// A branch (search/branch.py's Branch) and a link key (search/keys.py's keys) as fixed
// records of ids into the Store.
#pragma once

#include <cstdint>

#include "tables.hpp"

namespace dcmap {

constexpr int64_t NO_LINK = -1;  // a branch's link before its first link record
constexpr Id LAYER_DONE = NONE;  // a branch's `assigned` once its layer is complete (-1 in Python)

struct Branch {
    double cost = 0.0;
    double estimate = 0.0;  // g_hat
    double bound = 0.0;     // cost plus a lower bound on the rest
    int64_t link = NO_LINK;  // its last link record
    Id assigned = 0;         // mask id of the nodes of `layer` placed, or LAYER_DONE
    Id comps = 0;            // sequence of component mask ids
    Id frontier = 0;         // sequence of item ids
    Id fixed = 0;            // mask id: bit j, comps[j] is decided at this layer
    Id joins = 0;            // sequence of join mask ids since `link`
    int32_t layer = 0;

    bool layer_done() const { return assigned == LAYER_DONE; }
};

enum KeyKind : int32_t { LEAN_DONE = 0, LEAN_INSIDE = 1, FULL_DONE = 2, FULL_INSIDE = 3 };

// The parts of each kind (see search/keys.py's LinkKeys.of):
//   LEAN_DONE   (layer, frontier, shape, blocked):        a = frontier seq, b = shape seq, c = blocked words
//   LEAN_INSIDE ((layer, assigned, fixed, held), items, shape, blocked):
//               a = assigned mask, b = fixed mask, c = held mask, d = items seq, e = shape seq, f = blocked words
//   FULL_DONE   (layer, comps, frontier):                 a = comps seq, b = frontier seq
//   FULL_INSIDE ((layer, assigned, fixed), comps, frontier): a = assigned mask, b = fixed mask, c = comps seq,
//               d = frontier seq
struct Key {
    int32_t layer = 0;
    int32_t kind = LEAN_DONE;
    Id a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;

    bool operator==(const Key& o) const {
        return layer == o.layer && kind == o.kind && a == o.a && b == o.b && c == o.c && d == o.d && e == o.e &&
               f == o.f;
    }
    uint64_t hash() const {
        uint64_t h = mix64((static_cast<uint64_t>(static_cast<uint32_t>(layer)) << 32) | static_cast<uint32_t>(kind));
        h = mix64(h ^ ((static_cast<uint64_t>(a) << 32) | b));
        h = mix64(h ^ ((static_cast<uint64_t>(c) << 32) | d));
        return mix64(h ^ ((static_cast<uint64_t>(e) << 32) | f));
    }
};

// The sequences a branch and a key hold (by the key's kind), for a collection of the store.
template <class F>
void each_sequence(Branch& b, F&& f) {
    f(b.comps);
    f(b.frontier);
    f(b.joins);
}
template <class F>
void each_sequence(Key& k, F&& f) {
    switch (k.kind) {
        case LEAN_DONE: f(k.a), f(k.b); break;
        case LEAN_INSIDE: f(k.d), f(k.e); break;
        case FULL_DONE: f(k.a), f(k.b); break;
        default: f(k.c), f(k.d); break;
    }
}

struct Entry {  // a key's best cost and the record of that arrival
    double best;
    int64_t record;
};

}  // namespace dcmap
