// The values a native search holds, each interned once and named by an id of its kind
// (ids.hpp; as Fast Downward's state registry does): node and component masks, frontier
// items (a cluster-layer's members and its message), sequences of ids (a branch's
// components, frontier and joins; a key's shape), variable-length masks (a key's blocked
// pairs). Equal values have equal ids, so comparing values is comparing ids. Messages are
// ids too, given by the binding, one per distinct message value (the Python engine keeps
// one object per value likewise: search/messages.py); with the built-in model in the
// core, a message is a node set, and its id is its mask's (coded_message, message_mask).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bits.hpp"
#include "ids.hpp"
#include "tables.hpp"

namespace dcmap {

struct Item {  // a frontier cluster-layer: (members, message)
    MaskId members;
    MessageId message;
    bool operator==(const Item& o) const { return members == o.members && message == o.message; }
    uint64_t hash() const { return (static_cast<uint64_t>(members.value()) << 32) | message.value(); }
};

// The built-in model's messages are node sets: a message's id is its mask's id.
inline MessageId coded_message(MaskId mask) { return MessageId(mask.value()); }
inline MaskId message_mask(MessageId message) { return MaskId(message.value()); }

template <int W>
struct Store {
    Interner<Bits<W>, MaskId> masks;
    Interner<Item, ItemId> items;
    SeqInterner<uint32_t, SeqId> seqs;  // of mask ids or of item ids: what a sequence holds depends on its use
    SeqInterner<uint64_t, BigMaskId> words;  // masks of any length, without trailing zero words

    SeqId empty_seq;
    BigMaskId zero_words;
    MaskId zero_mask;

    Store() {
        empty_seq = seqs.intern(std::span<const uint32_t>());
        zero_words = words.intern(std::span<const uint64_t>());
        zero_mask = masks.intern(Bits<W>{});
    }

    MaskId mask(const Bits<W>& m) { return masks.intern(m); }
    const Bits<W>& mask(MaskId id) const { return masks[id]; }
    SeqId seq(std::span<const MaskId> s) { return seqs.intern(s); }
    SeqId seq(std::span<const ItemId> s) { return seqs.intern(s); }
    IdSpan<MaskId> masks_of(SeqId id) const { return IdSpan<MaskId>(seqs.get(id)); }
    IdSpan<ItemId> items_of(SeqId id) const { return IdSpan<ItemId>(seqs.get(id)); }
    ItemId item(MaskId members, MessageId message) { return items.intern(Item{members, message}); }
    const Bits<W>& item_mask(ItemId item) const { return masks[items[item].members]; }
    BigMaskId bigmask(std::vector<uint64_t>& w) {  // trims trailing zero words
        while (!w.empty() && w.back() == 0) w.pop_back();
        return words.intern(std::span<const uint64_t>(w));
    }
    std::span<const uint64_t> bigmask(BigMaskId id) const { return words.get(id); }

    size_t bytes() const { return masks.bytes() + items.bytes() + seqs.bytes() + words.bytes(); }
};

}  // namespace dcmap
