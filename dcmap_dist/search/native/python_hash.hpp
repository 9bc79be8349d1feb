// CPython's hash of non-negative ints and of tuples (Objects/longobject.c's long_hash,
// Objects/tupleobject.c's xxHash-based tuplehash, 64-bit builds), so that the native
// engine routes a link key to the shard Python's search/linking.py route() names: the
// workers and the coordinator of a distributed search agree on every key's owner.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dcmap {

constexpr uint64_t PY_MODULUS = (uint64_t{1} << 61) - 1;

// hash(int) of a non-negative int given as little-endian 64-bit words
inline int64_t python_int_hash(const uint64_t* words, size_t count) {
    unsigned __int128 acc = 0;
    for (size_t k = count; k-- > 0;) {
        acc = (acc << 64) | words[k];  // acc < 2^61 before the shift: fits in 128 bits
        acc = (acc & PY_MODULUS) + (acc >> 61);  // 2^61 = 1 (mod 2^61 - 1), folded twice
        acc = (acc & PY_MODULUS) + (acc >> 61);
        if (acc >= PY_MODULUS) acc -= PY_MODULUS;
    }
    return static_cast<int64_t>(acc);  // never -1 for a non-negative int
}

inline int64_t python_int_hash(int64_t value) {  // a small non-negative int
    uint64_t w = static_cast<uint64_t>(value);
    return python_int_hash(&w, 1);
}

class PythonTupleHash {
   public:
    void add(int64_t lane) {
        acc_ += static_cast<uint64_t>(lane) * PRIME_2;
        acc_ = (acc_ << 31) | (acc_ >> 33);
        acc_ *= PRIME_1;
        ++length_;
    }
    int64_t finish() const {
        uint64_t acc = acc_ + (length_ ^ (PRIME_5 ^ 3527539ull));
        if (acc == ~uint64_t{0}) return 1546275796;
        return static_cast<int64_t>(acc);
    }

   private:
    static constexpr uint64_t PRIME_1 = 11400714785074694791ull;
    static constexpr uint64_t PRIME_2 = 14029467366897019727ull;
    static constexpr uint64_t PRIME_5 = 2870177450012600261ull;
    uint64_t acc_ = PRIME_5;
    uint64_t length_ = 0;
};

// Python's `hash % shards` (a result in 0 .. shards - 1 whatever the hash's sign)
inline int python_mod(int64_t hash, int shards) {
    int64_t r = hash % shards;
    return static_cast<int>(r < 0 ? r + shards : r);
}

}  // namespace dcmap
