// Open-addressing hash tables over dense ids (the Swiss-table idea without its SIMD
// groups: a flat array of slots, linear probing, a byte of the hash kept beside each id
// so that most probes compare no value). Values live in vectors indexed by id; a slot
// holds id + 1 (0: empty) and never moves on its own, so ids are stable for ever.
//
// Interner<T>: one id per distinct value (ids 0, 1, 2, ... in order of first use).
// SeqInterner<E>: one id per distinct sequence of E, kept in one arena.
// FlatMap<K, V>: a map whose keys are interned; values by the key's id.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
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

// The slot array shared by the tables: finds or places an id whose value hashes to
// `hash` and for which `same(id)` holds.
class SlotIndex {
   public:
    SlotIndex() { rehash(16); }

    template <class Same>
    Id find(uint64_t hash, Same&& same) const {
        size_t mask = slots_.size() - 1;
        uint8_t tag = static_cast<uint8_t>(hash >> 56);
        for (size_t at = hash & mask;; at = (at + 1) & mask) {
            uint32_t held = slots_[at];
            if (held == 0) return NONE;
            if (tags_[at] == tag && same(held - 1)) return held - 1;
        }
    }

    // Places id `next` for a value that find() did not find (its hash `hash`).
    void place(uint64_t hash, Id next) {
        if ((count_ + 1) * 8 > slots_.size() * 7) grow();
        put(hash, next);
        ++count_;
    }

    size_t size() const { return count_; }
    size_t bytes() const { return slots_.capacity() * (sizeof(uint32_t) + 1); }

    // rebuilds the slots from every id's hash (after a growth)
    std::function<uint64_t(Id)> hash_of;

   private:
    std::vector<uint32_t> slots_;
    std::vector<uint8_t> tags_;
    size_t count_ = 0;

    void rehash(size_t capacity) {
        slots_.assign(capacity, 0);
        tags_.assign(capacity, 0);
    }
    void put(uint64_t hash, Id id) {
        size_t mask = slots_.size() - 1;
        size_t at = hash & mask;
        while (slots_[at] != 0) at = (at + 1) & mask;
        slots_[at] = id + 1;
        tags_[at] = static_cast<uint8_t>(hash >> 56);
    }
    void grow() {
        std::vector<uint32_t> old = std::move(slots_);
        rehash(old.size() * 2);
        for (uint32_t held : old)
            if (held) put(hash_of(held - 1), held - 1);
    }
};

// One id per distinct value of T (T has hash() and ==).
template <class T>
class Interner {
   public:
    Interner() {
        index_.hash_of = [this](Id id) { return mix64(values_[id].hash()); };
    }
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
    SeqInterner() {
        index_.hash_of = [this](Id id) { return hash(get(id)); };
        starts_.push_back(0);
    }
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
    size_t bytes() const {
        return arena_.capacity() * sizeof(E) + starts_.capacity() * sizeof(uint64_t) + index_.bytes();
    }

   private:
    std::vector<E> arena_;
    std::vector<uint64_t> starts_;
    SlotIndex index_;

    static uint64_t hash(std::span<const E> seq) {
        uint64_t h = 0x243F6A8885A308D3ull ^ seq.size();
        for (E e : seq) h = mix64(h ^ (static_cast<uint64_t>(e) + 0x9E3779B97F4A7C15ull));
        return h;
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
    V& value(Id id) { return values_[id]; }
    const V& value(Id id) const { return values_[id]; }
    size_t bytes() const { return keys_.bytes() + values_.capacity() * sizeof(V); }

   private:
    Interner<K> keys_;
    std::vector<V> values_;
};

}  // namespace dcmap
