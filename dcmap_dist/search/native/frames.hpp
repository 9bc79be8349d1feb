// The lean link records grouped by frame, as search/linking.py's LinkShard keeps them: a
// key's frame is the key without its limits (the outside masks of its shape, the blocked
// pairs; search/keys.py's frame_and_limits), and an arrival whose limits include those of
// a strictly cheaper record of its frame is dominated by it (docs/search.md, "Dominance by
// fewer limits"); a record made dominates the strictly dearer records of its frame whose
// limits include its own. Records are named by their position in the link table (order of
// first arrival); a frame's records are chained newest first, each with a signature of its
// limits (a word in which a subset's bits are a subset's), which turns most records of
// a chain away before their key is read.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "bits.hpp"
#include "branch.hpp"
#include "store.hpp"
#include "tables.hpp"

namespace dcmap {

template <int W>
class Frames {
   public:
    // What the index reads of a key, worked out once per arrival: its frame's hash and its
    // limits' signature (a full key has neither).
    struct Probe {
        bool lean = false;
        uint64_t hash = 0;
        uint64_t signature = 0;
    };
    static Probe probe(const Key& key, const Store<W>& store) {
        if (!key.lean()) return {};
        return {true, frame_hash(key, store), signature(key, store)};
    }

    // Index the record at `position` (the next one: positions come in order), of a key
    // whose probe is `p`.
    void add(size_t position, const Probe& p) {
        if (previous_.size() != position) throw std::logic_error("a link record indexed out of order");
        if (!p.lean) {
            previous_.push_back(NONE);
            signatures_.push_back(0);
            return;
        }
        uint32_t& newest = newest_.try_emplace(p.hash, NONE).first->second;
        previous_.push_back(newest);
        signatures_.push_back(p.signature);
        newest = static_cast<uint32_t>(position);
    }

    // search/linking.py's LinkShard.rivals: among the records of the frame of `key` (whose
    // probe is `p`), newest first, the first position q for which `cheaper(q)` holds and
    // whose limits are each a subset of `key`'s (it dominates the arrival), else -1 with
    // `dearer` given, in that order, every position q for which `dearer_at(q)` holds and
    // whose limits each include `key`'s (the arrival's record would dominate them); -1 and
    // none if `key` is not lean. `key_at(q)` is the key of the record at q.
    template <class KeyAt, class Cheaper, class Dearer>
    int64_t rivals(const Key& key, const Probe& p, const Store<W>& store, KeyAt&& key_at, Cheaper&& cheaper,
                   Dearer&& dearer_at, std::vector<uint32_t>& dearer) const {
        dearer.clear();
        if (!p.lean) return -1;
        auto found = newest_.find(p.hash);
        if (found == newest_.end()) return -1;
        IdSpan<MaskId> shape = store.masks_of(key.masks());
        std::span<const uint64_t> blocked = store.bigmask(key.blocked());
        for (uint32_t at = found->second; at != NONE; at = previous_[at]) {
            const bool fewer = (signatures_[at] & ~p.signature) == 0;  // theirs may be a subset of key's
            const bool more = (p.signature & ~signatures_[at]) == 0;   // key's may be a subset of theirs
            if (!fewer && !more) continue;
            const bool below = cheaper(at);  // else its key is read only if it may be dominated
            if (below ? !fewer : !(more && dearer_at(at))) continue;
            const Key& theirs = key_at(at);
            if (!same_frame(theirs, key, store)) continue;
            if (below) {
                if (within_limits(theirs, shape, blocked, store)) {
                    dearer.clear();  // no record is made: it dominates none
                    return at;
                }
            } else if (within_limits(key, store.masks_of(theirs.masks()), store.bigmask(theirs.blocked()), store)) {
                dearer.push_back(at);
            }
        }
        return -1;
    }

    size_t bytes() const { return previous_.capacity() * 4 + signatures_.capacity() * 8 + newest_.size() * 32; }

   private:
    static constexpr uint32_t NONE = UINT32_MAX;
    std::unordered_map<uint64_t, uint32_t> newest_;  // a frame's hash -> its newest record
    std::vector<uint32_t> previous_;                 // per record: the previous one of its frame's hash
    std::vector<uint64_t> signatures_;               // per record: signature(its key)

    // The limits folded into a word: part k's outside nodes rotated by 7k, the blocked
    // pairs by 29, every word of each or-ed together. An element always lands on the same
    // bit, so limits that are a subset of others have a signature that is a subset of theirs.
    static uint64_t signature(const Key& key, const Store<W>& store) {
        uint64_t folded = 0;
        IdSpan<MaskId> shape = store.masks_of(key.masks());
        for (size_t k = 1; k < shape.size(); k += 2)
            for (uint64_t word : store.mask(shape[k]).w) folded |= std::rotl(word, static_cast<int>(7 * (k / 2) % 64));
        for (uint64_t word : store.bigmask(key.blocked())) folded |= std::rotl(word, 29);
        return folded;
    }

    // Hashes the frame's values (item and mask ids, which a collection of the store keeps),
    // not its sequences' ids (which it renumbers).
    static uint64_t frame_hash(const Key& key, const Store<W>& store) {
        uint64_t h = mix64((static_cast<uint64_t>(static_cast<uint32_t>(key.layer)) << 32) |
                           static_cast<uint32_t>(static_cast<int32_t>(key.kind())));
        if (!key.done()) {
            h = mix64(h ^ key.assigned().value());
            h = mix64(h ^ ((static_cast<uint64_t>(key.fixed().value()) << 32) | key.held().value()));
        }
        for (ItemId item : store.items_of(key.items())) h = mix64(h ^ item.value());
        IdSpan<MaskId> shape = store.masks_of(key.masks());
        for (size_t k = 0; k < shape.size(); k += 2) h = mix64(h ^ (shape[k].value() + (uint64_t{1} << 32)));
        return h;
    }

    static bool same_frame(const Key& a, const Key& b, const Store<W>& store) {
        if (a.layer != b.layer || a.kind() != b.kind() || a.items() != b.items()) return false;
        if (!a.done() && (a.assigned() != b.assigned() || a.fixed() != b.fixed() || a.held() != b.held()))
            return false;
        IdSpan<MaskId> x = store.masks_of(a.masks()), y = store.masks_of(b.masks());
        if (x.size() != y.size()) return false;
        for (size_t k = 0; k < x.size(); k += 2)
            if (x[k] != y[k]) return false;
        return true;
    }

    // whether `theirs`'s outside masks and blocked pairs are each a subset of `shape`'s and `blocked`
    // (another key's of the same frame)
    static bool within_limits(const Key& theirs, IdSpan<MaskId> shape, std::span<const uint64_t> blocked,
                              const Store<W>& store) {
        std::span<const uint64_t> their_blocked = store.bigmask(theirs.blocked());
        for (size_t w = 0; w < their_blocked.size(); ++w)
            if (their_blocked[w] & ~(w < blocked.size() ? blocked[w] : uint64_t{0})) return false;
        IdSpan<MaskId> their_shape = store.masks_of(theirs.masks());
        for (size_t k = 1; k < shape.size(); k += 2)
            if (their_shape[k] != shape[k] && store.mask(their_shape[k]).minus(store.mask(shape[k])).any())
                return false;
        return true;
    }
};

}  // namespace dcmap
