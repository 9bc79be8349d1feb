// The values a native search holds, each interned once and named by a 32-bit id (as Fast
// Downward's state registry does): node and component masks, frontier items (a
// cluster-layer's members and its message), sequences of ids (a branch's components,
// frontier and joins; a key's shape), variable-length masks (a key's blocked pairs).
// Equal values have equal ids, so comparing values is comparing ids. Messages are ids
// too, given by the binding, one per distinct message value (the Python engine keeps one
// object per value likewise: search/messages.py).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bits.hpp"
#include "tables.hpp"

namespace dcmap {

struct Item {  // a frontier cluster-layer: (members, message)
    Id members;
    Id message;
    bool operator==(const Item& o) const { return members == o.members && message == o.message; }
    uint64_t hash() const { return (static_cast<uint64_t>(members) << 32) | message; }
};

template <int W>
struct Store {
    Interner<Bits<W>> masks;
    Interner<Item> items;
    SeqInterner<Id> seqs;  // of mask ids or of item ids: what a sequence holds depends on its use
    SeqInterner<uint64_t> words;  // masks of any length, without trailing zero words

    Id empty_seq;
    Id zero_words;
    Id zero_mask;

    Store() {
        empty_seq = seqs.intern({});
        zero_words = words.intern({});
        zero_mask = masks.intern(Bits<W>{});
    }

    Id mask(const Bits<W>& m) { return masks.intern(m); }
    const Bits<W>& mask(Id id) const { return masks[id]; }
    Id seq(std::span<const Id> s) { return seqs.intern(s); }
    std::span<const Id> seq(Id id) const { return seqs.get(id); }
    Id item(Id members, Id message) { return items.intern(Item{members, message}); }
    const Bits<W>& item_mask(Id item) const { return masks[items[item].members]; }
    Id bigmask(std::vector<uint64_t>& w) {  // trims trailing zero words
        while (!w.empty() && w.back() == 0) w.pop_back();
        return words.intern(w);
    }

    size_t bytes() const { return masks.bytes() + items.bytes() + seqs.bytes() + words.bytes(); }
};

}  // namespace dcmap
