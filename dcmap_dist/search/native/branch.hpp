// A branch (search/branch.py's Branch) and a link key (search/keys.py's keys) as fixed
// records of ids into the Store.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>

#include "ids.hpp"
#include "tables.hpp"

namespace dcmap {

constexpr int64_t NO_LINK = -1;  // a branch's link before its first link record
constexpr MaskId LAYER_DONE = MaskId::none();  // a branch's `assigned` once its layer is complete (-1 in Python)

struct Branch {
    double cost = 0.0;
    double estimate = 0.0;  // g_hat
    double bound = 0.0;     // cost plus a lower bound on the rest
    int64_t link = NO_LINK;  // its last link record
    MaskId assigned;         // the nodes of `layer` placed, or LAYER_DONE
    SeqId comps;             // of component mask ids
    SeqId frontier;          // of item ids
    MaskId fixed;            // bit j: comps[j] is decided at this layer
    SeqId joins;             // of join mask ids since `link`
    int32_t layer = 0;

    bool layer_done() const { return assigned == LAYER_DONE; }
};

// The kinds of link key (search/keys.py's LinkKeys.of): lean or full, of a completed layer
// (DONE) or inside one. The codes are the batch format's (batch.hpp, search/batches.py).
enum class KeyKind : int32_t { LEAN_DONE = 0, LEAN_INSIDE = 1, FULL_DONE = 2, FULL_INSIDE = 3 };

// A key's parts, by what they are:
enum class KeyPart : uint8_t {
    NONE,      // a kind has fewer than six parts
    ASSIGNED,  // mask: the nodes of the layer placed (inside a layer)
    FIXED,     // mask: bit j, the j-th component is decided at this layer (inside a layer)
    HELD,      // mask: bit j, the j-th component is fixed and spans the layer (lean, inside)
    ITEMS,     // item sequence: the frontier (lean: its items grouped by component inside a layer)
    MASKS,     // mask sequence: the shape (lean) or the components (full)
    BLOCKED,   // long mask: the blocked pairs of components (lean)
};

// Each kind's parts in the order of its tuple in search/keys.py, after the layer: the order
// a Key holds them in and the batch format writes them in (its row's six parts).
constexpr std::array<std::array<KeyPart, 6>, 4> KEY_PARTS = {{
    // LEAN_DONE: (layer, frontier, shape, blocked)
    {KeyPart::ITEMS, KeyPart::MASKS, KeyPart::BLOCKED, KeyPart::NONE, KeyPart::NONE, KeyPart::NONE},
    // LEAN_INSIDE: ((layer, assigned, fixed, held), items, shape, blocked)
    {KeyPart::ASSIGNED, KeyPart::FIXED, KeyPart::HELD, KeyPart::ITEMS, KeyPart::MASKS, KeyPart::BLOCKED},
    // FULL_DONE: (layer, comps, frontier)
    {KeyPart::MASKS, KeyPart::ITEMS, KeyPart::NONE, KeyPart::NONE, KeyPart::NONE, KeyPart::NONE},
    // FULL_INSIDE: ((layer, assigned, fixed), comps, frontier)
    {KeyPart::ASSIGNED, KeyPart::FIXED, KeyPart::MASKS, KeyPart::ITEMS, KeyPart::NONE, KeyPart::NONE},
}};

constexpr const std::array<KeyPart, 6>& parts_of(KeyKind kind) { return KEY_PARTS[static_cast<size_t>(kind)]; }

// Where a kind holds a part (-1: it has none).
constexpr int slot_of(KeyKind kind, KeyPart part) {
    for (int j = 0; j < 6; ++j)
        if (parts_of(kind)[j] == part) return j;
    return -1;
}

// A link key: its layer, its kind and its parts (KEY_PARTS), made by the kind's maker and
// read by name; asking a kind for a part it has not is a logic_error.
class Key {
   public:
    int32_t layer = 0;

    Key() = default;
    static Key lean_done(int32_t layer, SeqId frontier, SeqId shape, BigMaskId blocked) {
        Key k(layer, KeyKind::LEAN_DONE);
        k.set(KeyPart::ITEMS, frontier.value()), k.set(KeyPart::MASKS, shape.value()), k.set(KeyPart::BLOCKED, blocked.value());
        return k;
    }
    static Key lean_inside(int32_t layer, MaskId assigned, MaskId fixed, MaskId held, SeqId items, SeqId shape,
                           BigMaskId blocked) {
        Key k(layer, KeyKind::LEAN_INSIDE);
        k.set(KeyPart::ASSIGNED, assigned.value()), k.set(KeyPart::FIXED, fixed.value()), k.set(KeyPart::HELD, held.value());
        k.set(KeyPart::ITEMS, items.value()), k.set(KeyPart::MASKS, shape.value()), k.set(KeyPart::BLOCKED, blocked.value());
        return k;
    }
    static Key full_done(int32_t layer, SeqId comps, SeqId frontier) {
        Key k(layer, KeyKind::FULL_DONE);
        k.set(KeyPart::MASKS, comps.value()), k.set(KeyPart::ITEMS, frontier.value());
        return k;
    }
    static Key full_inside(int32_t layer, MaskId assigned, MaskId fixed, SeqId comps, SeqId frontier) {
        Key k(layer, KeyKind::FULL_INSIDE);
        k.set(KeyPart::ASSIGNED, assigned.value()), k.set(KeyPart::FIXED, fixed.value());
        k.set(KeyPart::MASKS, comps.value()), k.set(KeyPart::ITEMS, frontier.value());
        return k;
    }

    KeyKind kind() const { return kind_; }
    bool lean() const { return kind_ == KeyKind::LEAN_DONE || kind_ == KeyKind::LEAN_INSIDE; }
    bool done() const { return kind_ == KeyKind::LEAN_DONE || kind_ == KeyKind::FULL_DONE; }
    bool has(KeyPart part) const { return slot_of(kind_, part) >= 0; }

    MaskId assigned() const { return MaskId(get(KeyPart::ASSIGNED)); }
    MaskId fixed() const { return MaskId(get(KeyPart::FIXED)); }
    MaskId held() const { return MaskId(get(KeyPart::HELD)); }
    SeqId items() const { return SeqId(get(KeyPart::ITEMS)); }  // the frontier's items
    SeqId masks() const { return SeqId(get(KeyPart::MASKS)); }  // the shape (lean) or the components (full)
    BigMaskId blocked() const { return BigMaskId(get(KeyPart::BLOCKED)); }
    void set_items(SeqId seq) { set(KeyPart::ITEMS, seq.value()); }
    void set_masks(SeqId seq) { set(KeyPart::MASKS, seq.value()); }

    // the raw word of the j-th part (0 past the kind's parts): the batch format's
    uint32_t word(int j) const { return parts_[j]; }
    // A key of `kind` from its parts' raw words (the batch reader's, each checked against
    // what KEY_PARTS says the part is; the words past the kind's parts 0).
    static Key of_words(int32_t layer, KeyKind kind, const std::array<uint32_t, 6>& words) {
        Key k(layer, kind);
        k.parts_ = words;
        return k;
    }

    bool operator==(const Key& o) const { return layer == o.layer && kind_ == o.kind_ && parts_ == o.parts_; }
    uint64_t hash() const {
        const auto& p = parts_;
        uint64_t h = mix64((static_cast<uint64_t>(static_cast<uint32_t>(layer)) << 32) |
                           static_cast<uint32_t>(static_cast<int32_t>(kind_)));
        h = mix64(h ^ ((static_cast<uint64_t>(p[0]) << 32) | p[1]));
        h = mix64(h ^ ((static_cast<uint64_t>(p[2]) << 32) | p[3]));
        return mix64(h ^ ((static_cast<uint64_t>(p[4]) << 32) | p[5]));
    }

   private:
    KeyKind kind_ = KeyKind::LEAN_DONE;
    std::array<uint32_t, 6> parts_{};

    Key(int32_t layer_, KeyKind kind) : layer(layer_), kind_(kind) {}
    uint32_t get(KeyPart part) const {
        int j = slot_of(kind_, part);
        if (j < 0) throw std::logic_error("a link key asked for a part its kind has not");
        return parts_[j];
    }
    void set(KeyPart part, uint32_t word) {
        int j = slot_of(kind_, part);
        if (j < 0) throw std::logic_error("a link key given a part its kind has not");
        parts_[j] = word;
    }
};

// The sequences a branch and a key hold, for a collection of the store.
template <class F>
void each_sequence(Branch& b, F&& f) {
    f(b.comps);
    f(b.frontier);
    f(b.joins);
}
template <class F>
void each_sequence(Key& k, F&& f) {
    SeqId items = k.items(), masks = k.masks();
    f(items);
    f(masks);
    k.set_items(items);
    k.set_masks(masks);
}

struct Entry {  // a key's best cost and the record of that arrival
    double best;
    int64_t record;
};

}  // namespace dcmap
