// Open-addressing hash tables over dense ids (the Swiss-table idea without its SIMD
// groups: a flat array of slots, linear probing, 32 bits of the hash kept beside each id
// so that most probes compare no value). Values live in vectors indexed by id; a slot
// holds id + 1 (0: empty) and never moves on its own, so ids are stable for ever.
//
// Interner<T, IdT>: one id per distinct value (ids 0, 1, 2, ... in order of first use).
// SeqInterner<E, IdT>: one id per distinct sequence of E (raw words), kept in one arena.
// FlatMap<K, V>: a map whose keys are interned; values by the key's position.
// The tables hand out ids of the type IdT (ids.hpp), so that one kind's id cannot be
// asked of another kind's table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <span>
#include <stdexcept>
#include <vector>

#include "ids.hpp"

namespace dcmap {

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
    uint32_t find(uint64_t hash, Same&& same) const {
        size_t mask = slots_.size() - 1;
        uint32_t check = static_cast<uint32_t>(hash >> 32);
        for (size_t at = hash & mask;; at = (at + 1) & mask) {
            const Slot& slot = slots_[at];
            if (slot.held == 0) return NONE;
            if (slot.check == check && same(slot.held - 1)) return slot.held - 1;
        }
    }

    // Places id `next` (the next id, its value's hash `hash`) for a value find() did not find.
    void place(uint64_t hash, uint32_t next) {
        hashes_.push_back(hash);
        if (hashes_.size() * 8 > slots_.size() * 7) grow();
        put(hash, next);
    }

    size_t size() const { return hashes_.size(); }
    // Keeps the ids `kept` says (their new ids ascending, as compact() numbers them),
    // under their new ids, in place.
    template <class Kept>
    void keep(Kept&& kept_id) {
        size_t kept = 0;
        for (size_t id = 0; id < hashes_.size(); ++id)
            if (kept_id(id)) hashes_[kept++] = hashes_[id];
        hashes_.resize(kept);
        std::fill(slots_.begin(), slots_.end(), Slot{0, 0});
        for (size_t id = 0; id < kept; ++id) put(hashes_[id], static_cast<uint32_t>(id));
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

    void put(uint64_t hash, uint32_t id) {
        size_t mask = slots_.size() - 1;
        size_t at = hash & mask;
        while (slots_[at].held != 0) at = (at + 1) & mask;
        slots_[at] = Slot{id + 1, static_cast<uint32_t>(hash >> 32)};
    }
    void grow() {
        slots_.assign(slots_.size() * 2, Slot{0, 0});
        for (size_t id = 0; id + 1 < hashes_.size(); ++id) put(hashes_[id], static_cast<uint32_t>(id));
    }
};

// One id (of type IdT) per distinct value of T (T has hash() and ==).
template <class T, class IdT>
class Interner {
   public:
    Interner() = default;
    Interner(const Interner&) = delete;
    Interner& operator=(const Interner&) = delete;

    IdT intern(const T& value) {
        uint64_t h = mix64(value.hash());
        uint32_t found = index_.find(h, [&](uint32_t id) { return values_[id] == value; });
        if (found != NONE) return IdT(found);
        if (values_.size() >= NONE - 1) throw std::length_error("too many distinct values for 32-bit ids");
        uint32_t id = static_cast<uint32_t>(values_.size());
        values_.push_back(value);
        index_.place(h, id);
        return IdT(id);
    }
    IdT find(const T& value) const {  // none() if not interned
        return IdT(index_.find(mix64(value.hash()), [&](uint32_t id) { return values_[id] == value; }));
    }
    void swap(Interner& other) {
        values_.swap(other.values_);
        std::swap(index_, other.index_);
    }
    const T& operator[](IdT id) const { return values_[id.value()]; }
    size_t size() const { return values_.size(); }
    size_t bytes() const { return values_.capacity() * sizeof(T) + index_.bytes(); }

   private:
    std::vector<T> values_;
    SlotIndex index_;
};

// One id (of type IdT) per distinct sequence of E (an unsigned integer type): a sequence
// is given as E or as ids whose raw word is an E (ids.hpp), and read back as E.
template <class E, class IdT>
class SeqInterner {
   public:
    SeqInterner() { starts_.push_back(0); }
    SeqInterner(const SeqInterner&) = delete;
    SeqInterner& operator=(const SeqInterner&) = delete;

    template <class T>
    IdT intern(std::span<const T> seq) {
        static_assert(sizeof(T) == sizeof(E) && std::is_trivially_copyable_v<T>, "a sequence of E's words");
        uint64_t h = hash(seq);
        uint32_t found = index_.find(h, [&](uint32_t id) { return same(get(IdT(id)), seq); });
        if (found != NONE) return IdT(found);
        if (starts_.size() >= NONE - 1) throw std::length_error("too many distinct sequences for 32-bit ids");
        uint32_t id = static_cast<uint32_t>(starts_.size() - 1);
        size_t at = arena_.size();
        arena_.resize(at + seq.size());
        if (!seq.empty()) std::memcpy(arena_.data() + at, seq.data(), seq.size() * sizeof(E));
        starts_.push_back(arena_.size());
        index_.place(h, id);
        return IdT(id);
    }
    std::span<const E> get(IdT id) const {
        const uint32_t k = id.value();
        return std::span<const E>(arena_.data() + starts_[k], starts_[k + 1] - starts_[k]);
    }
    size_t size() const { return starts_.size() - 1; }

    // Keeps only the sequences `live` marks (by id), renumbered in their order; returns
    // each old id's new one (none(): dropped). Every holder of an id must then be renumbered.
    // In place: a kept sequence only moves towards the front, so nothing is copied aside
    // (a copy would double the store, the largest structure, past a memory limit).
    std::vector<IdT> compact(const std::vector<uint8_t>& live) {
        std::vector<IdT> renumbered(size(), IdT::none());
        uint32_t kept = 0;
        size_t end = 0;  // of the kept sequences' elements
        for (uint32_t id = 0; id < size(); ++id) {
            if (id >= live.size() || !live[id]) continue;
            size_t from = starts_[id], length = starts_[id + 1] - from;
            if (length) std::memmove(arena_.data() + end, arena_.data() + from, length * sizeof(E));
            starts_[kept] = end;  // kept <= id: starts_[id + 1] and later are still unread
            end += length;
            renumbered[id] = IdT(kept++);
        }
        starts_[kept] = end;
        starts_.resize(kept + 1);
        arena_.resize(end);
        index_.keep([&](size_t id) { return !renumbered[id].is_none(); });
        return renumbered;
    }
    size_t bytes() const {
        return arena_.capacity() * sizeof(E) + starts_.capacity() * sizeof(uint64_t) + index_.bytes();
    }

   private:
    std::vector<E> arena_;
    std::vector<uint64_t> starts_;
    SlotIndex index_;

    template <class T>
    static uint64_t hash(std::span<const T> seq) {
        uint64_t h = 0x243F6A8885A308D3ull ^ (seq.size() * 0xD6E8FEB86659FD93ull);
        for (T e : seq) {
            h = (h ^ static_cast<uint64_t>(raw(e))) * 0x9E3779B97F4A7C15ull;
            h ^= h >> 29;
        }
        return mix64(h);
    }
    template <class T>
    static bool same(std::span<const E> a, std::span<const T> b) {  // word for word
        return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(E)) == 0);
    }
};

// A map whose keys (K: hash() and ==) are interned: the key's position (0, 1, 2, ... in
// order of first use) indexes the value.
template <class K, class V>
class FlatMap {
   public:
    V* find(const K& key) {
        Position at = keys_.find(key);
        return at.is_none() ? nullptr : &values_[at.value()];
    }
    const V* find(const K& key) const {
        Position at = keys_.find(key);
        return at.is_none() ? nullptr : &values_[at.value()];
    }
    // the value of `key`, made with `fallback` if it has none
    V& at(const K& key, const V& fallback) {
        Position at = keys_.intern(key);
        if (at.value() == values_.size()) values_.push_back(fallback);
        return values_[at.value()];
    }
    size_t size() const { return values_.size(); }
    const K& key(size_t position) const { return keys_[Position(static_cast<uint32_t>(position))]; }
    // Every key rewritten by `rewrite` (which must keep distinct keys distinct), in order.
    template <class Rewrite>
    void rewrite_keys(Rewrite&& rewrite) {
        Interner<K, Position> keys;
        for (uint32_t at = 0; at < values_.size(); ++at)
            if (keys.intern(rewrite(keys_[Position(at)])) != Position(at))
                throw std::logic_error("two keys rewritten into one");
        keys_.swap(keys);
    }
    void clear() {
        Interner<K, Position> keys;
        keys_.swap(keys);
        values_.clear();
    }
    V& value(size_t position) { return values_[position]; }
    const V& value(size_t position) const { return values_[position]; }
    // the position of a value `find` gave
    size_t position(const V* value) const { return static_cast<size_t>(value - values_.data()); }
    size_t bytes() const { return keys_.bytes() + values_.capacity() * sizeof(V); }

   private:
    using Position = TypedId<FlatMap>;
    Interner<K, Position> keys_;
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
