// Open-addressing hash tables over dense ids (the Swiss-table idea without its SIMD
// groups: a flat array of slots, linear probing, a byte of the hash kept beside each id
// so that most probes compare no value). Values live in vectors indexed by id; a slot
// holds id + 1 (0: empty) and never moves on its own, so ids are stable for ever.
//
// Interner<T>: one id per distinct value (ids 0, 1, 2, ... in order of first use).
// SeqInterner<E>: one id per distinct sequence of E, kept in one arena.
// FlatMap<K, V>: a map whose keys are interned; values by the key's id.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <span>
#include <stdexcept>
#include <vector>

namespace dcmap {

using Id = uint32_t;
constexpr Id NONE = 0xFFFFFFFFu;

inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

// The slot array shared by the tables: a slot holds an id + 1 (0: empty) and 32 bits of
// its value's hash, so that a probe compares a value only when those bits agree; the
// table keeps every id's hash, so that growing it hashes nothing again.
class SlotIndex {
   public:
    SlotIndex() { slots_.assign(16, Slot{0, 0}); }

    template <class Same>
    Id find(uint64_t hash, Same&& same) const {
        size_t mask = slots_.size() - 1;
        uint32_t check = static_cast<uint32_t>(hash >> 32);
        for (size_t at = hash & mask;; at = (at + 1) & mask) {
            const Slot& slot = slots_[at];
            if (slot.held == 0) return NONE;
            if (slot.check == check && same(slot.held - 1)) return slot.held - 1;
        }
    }

    // Places id `next` (the next id, its value's hash `hash`) for a value find() did not find.
    void place(uint64_t hash, Id next) {
        hashes_.push_back(hash);
        if (hashes_.size() * 8 > slots_.size() * 7) grow();
        put(hash, next);
    }

    size_t size() const { return hashes_.size(); }
    // Keeps the ids `renumbered` gives a new id (ascending, as compact() numbers them),
    // under their new ids, in place.
    void keep(const std::vector<Id>& renumbered) {
        size_t kept = 0;
        for (size_t id = 0; id < hashes_.size(); ++id)
            if (renumbered[id] != NONE) hashes_[kept++] = hashes_[id];
        hashes_.resize(kept);
        std::fill(slots_.begin(), slots_.end(), Slot{0, 0});
        for (size_t id = 0; id < kept; ++id) put(hashes_[id], static_cast<Id>(id));
    }
    size_t bytes() const { return slots_.capacity() * sizeof(Slot) + hashes_.capacity() * sizeof(uint64_t); }
    void clear() {
        slots_.assign(16, Slot{0, 0});
        hashes_.clear();
        hashes_.shrink_to_fit();
    }

   private:
    struct Slot {
        uint32_t held;
        uint32_t check;
    };
    std::vector<Slot> slots_;
    std::vector<uint64_t> hashes_;  // by id

    void put(uint64_t hash, Id id) {
        size_t mask = slots_.size() - 1;
        size_t at = hash & mask;
        while (slots_[at].held != 0) at = (at + 1) & mask;
        slots_[at] = Slot{id + 1, static_cast<uint32_t>(hash >> 32)};
    }
    void grow() {
        slots_.assign(slots_.size() * 2, Slot{0, 0});
        for (size_t id = 0; id + 1 < hashes_.size(); ++id) put(hashes_[id], static_cast<Id>(id));
    }
};

// One id per distinct value of T (T has hash() and ==).
template <class T>
class Interner {
   public:
    Interner() = default;
    Interner(const Interner&) = delete;
    Interner& operator=(const Interner&) = delete;

    Id intern(const T& value) {
        uint64_t h = mix64(value.hash());
        Id found = index_.find(h, [&](Id id) { return values_[id] == value; });
        if (found != NONE) return found;
        if (values_.size() >= NONE - 1) throw std::length_error("too many distinct values for 32-bit ids");
        Id id = static_cast<Id>(values_.size());
        values_.push_back(value);
        index_.place(h, id);
        return id;
    }
    Id find(const T& value) const {
        return index_.find(mix64(value.hash()), [&](Id id) { return values_[id] == value; });
    }
    void swap(Interner& other) {
        values_.swap(other.values_);
        std::swap(index_, other.index_);
    }
    const T& operator[](Id id) const { return values_[id]; }
    size_t size() const { return values_.size(); }
    size_t bytes() const { return values_.capacity() * sizeof(T) + index_.bytes(); }

   private:
    std::vector<T> values_;
    SlotIndex index_;
};

// One id per distinct sequence of E (E an unsigned integer type).
template <class E>
class SeqInterner {
   public:
    SeqInterner() { starts_.push_back(0); }
    SeqInterner(const SeqInterner&) = delete;
    SeqInterner& operator=(const SeqInterner&) = delete;

    Id intern(std::span<const E> seq) {
        uint64_t h = hash(seq);
        Id found = index_.find(h, [&](Id id) { return same(get(id), seq); });
        if (found != NONE) return found;
        if (starts_.size() >= NONE - 1) throw std::length_error("too many distinct sequences for 32-bit ids");
        Id id = static_cast<Id>(starts_.size() - 1);
        arena_.insert(arena_.end(), seq.begin(), seq.end());
        starts_.push_back(arena_.size());
        index_.place(h, id);
        return id;
    }
    std::span<const E> get(Id id) const {
        return std::span<const E>(arena_.data() + starts_[id], starts_[id + 1] - starts_[id]);
    }
    size_t size() const { return starts_.size() - 1; }

    // Keeps only the sequences `live` marks (by id), renumbered in their order; returns
    // each old id's new one (NONE: dropped). Every holder of an id must then be renumbered.
    // In place: a kept sequence only moves towards the front, so nothing is copied aside
    // (a copy would double the store, the largest structure, past a memory limit).
    std::vector<Id> compact(const std::vector<uint8_t>& live) {
        std::vector<Id> renumbered(size(), NONE);
        Id kept = 0;
        size_t end = 0;  // of the kept sequences' elements
        for (Id id = 0; id < size(); ++id) {
            if (id >= live.size() || !live[id]) continue;
            size_t from = starts_[id], length = starts_[id + 1] - from;
            if (length) std::memmove(arena_.data() + end, arena_.data() + from, length * sizeof(E));
            starts_[kept] = end;  // kept <= id: starts_[id + 1] and later are still unread
            end += length;
            renumbered[id] = kept++;
        }
        starts_[kept] = end;
        starts_.resize(kept + 1);
        arena_.resize(end);
        index_.keep(renumbered);
        return renumbered;
    }
    size_t bytes() const {
        return arena_.capacity() * sizeof(E) + starts_.capacity() * sizeof(uint64_t) + index_.bytes();
    }

   private:
    std::vector<E> arena_;
    std::vector<uint64_t> starts_;
    SlotIndex index_;

    static uint64_t hash(std::span<const E> seq) {
        uint64_t h = 0x243F6A8885A308D3ull ^ (seq.size() * 0xD6E8FEB86659FD93ull);
        for (E e : seq) {
            h = (h ^ static_cast<uint64_t>(e)) * 0x9E3779B97F4A7C15ull;
            h ^= h >> 29;
        }
        return mix64(h);
    }
    static bool same(std::span<const E> a, std::span<const E> b) {
        return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(E)) == 0);
    }
};

// A map whose keys (K: hash() and ==) are interned: the key's id indexes the value.
template <class K, class V>
class FlatMap {
   public:
    V* find(const K& key) {
        Id id = keys_.find(key);
        return id == NONE ? nullptr : &values_[id];
    }
    const V* find(const K& key) const {
        Id id = keys_.find(key);
        return id == NONE ? nullptr : &values_[id];
    }
    // the value of `key`, made with `fallback` if it has none
    V& at(const K& key, const V& fallback) {
        Id id = keys_.intern(key);
        if (id == values_.size()) values_.push_back(fallback);
        return values_[id];
    }
    size_t size() const { return values_.size(); }
    const K& key(Id id) const { return keys_[id]; }
    // Every key rewritten by `rewrite` (which must keep distinct keys distinct), in order.
    template <class Rewrite>
    void rewrite_keys(Rewrite&& rewrite) {
        Interner<K> keys;
        for (Id id = 0; id < values_.size(); ++id)
            if (keys.intern(rewrite(keys_[id])) != id) throw std::logic_error("two keys rewritten into one");
        keys_.swap(keys);
    }
    void clear() {
        Interner<K> keys;
        keys_.swap(keys);
        values_.clear();
    }
    V& value(Id id) { return values_[id]; }
    const V& value(Id id) const { return values_[id]; }
    size_t bytes() const { return keys_.bytes() + values_.capacity() * sizeof(V); }

   private:
    Interner<K> keys_;
    std::vector<V> values_;
};

}  // namespace dcmap

namespace dcmap {

// A direct-mapped cache: one slot per hash value of 2^BITS, the newer value in a slot
// replacing the older. For results the search would compute again, identically, when
// they are forgotten: a miss costs their computation, never a different answer.
template <class K, class V, int BITS>
class DirectCache {
   public:
    DirectCache() : slots_(size_t{1} << BITS) {}
    const V* find(const K& key) const {
        const Slot& slot = slots_[mix64(key.hash()) & MASK];
        return slot.used && slot.key == key ? &slot.value : nullptr;
    }
    void put(const K& key, const V& value) { slots_[mix64(key.hash()) & MASK] = Slot{key, value, true}; }
    void clear() {
        for (Slot& slot : slots_) slot.used = false;
    }
    size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

   private:
    static constexpr size_t MASK = (size_t{1} << BITS) - 1;
    struct Slot {
        K key{};
        V value{};
        bool used = false;
    };
    std::vector<Slot> slots_;
};

}  // namespace dcmap
