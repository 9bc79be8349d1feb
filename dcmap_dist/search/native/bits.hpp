// A set of nodes (or of components) as a fixed array of W 64-bit words: bit i of word
// i / 64 is element i. The Python engine's masks are Python ints; a Bits<W> holds the
// same value, little-endian by word, for networks of up to 64 * W nodes.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace dcmap {

template <int W>
struct Bits {
    std::array<uint64_t, W> w{};

    static Bits bit(int i) {
        Bits b;
        b.set(i);
        return b;
    }
    static Bits low(int n) {  // the elements 0 .. n-1
        Bits b;
        for (int k = 0; k < W; ++k) {
            int left = n - 64 * k;
            b.w[k] = left >= 64 ? ~uint64_t{0} : left <= 0 ? 0 : (uint64_t{1} << left) - 1;
        }
        return b;
    }

    bool any() const {
        for (int k = 0; k < W; ++k)
            if (w[k]) return true;
        return false;
    }
    bool none() const { return !any(); }
    // an element past the mask's width is never in it, and cannot be added: the checks cost
    // a comparison and keep a malformed branch (from a damaged checkpoint) from writing past it
    bool test(int i) const { return i >= 0 && i < 64 * W && ((w[i >> 6] >> (i & 63)) & 1); }
    void set(int i) {
        if (i < 0 || i >= 64 * W) throw std::out_of_range("an element past a mask's width");
        w[i >> 6] |= uint64_t{1} << (i & 63);
    }
    int count() const {
        int c = 0;
        for (int k = 0; k < W; ++k) c += std::popcount(w[k]);
        return c;
    }
    int lowest() const {  // the smallest element; -1 if empty
        for (int k = 0; k < W; ++k)
            if (w[k]) return 64 * k + std::countr_zero(w[k]);
        return -1;
    }
    bool many() const {  // two elements or more
        int seen = 0;
        for (int k = 0; k < W; ++k) {
            if (!w[k]) continue;
            if (w[k] & (w[k] - 1)) return true;
            if (++seen > 1) return true;
        }
        return false;
    }
    Bits lowest_bit() const {  // {lowest()}, or empty
        Bits b;
        for (int k = 0; k < W; ++k)
            if (w[k]) {
                b.w[k] = w[k] & (~w[k] + 1);
                return b;
            }
        return b;
    }
    int bit_length() const {  // as Python's int.bit_length
        for (int k = W - 1; k >= 0; --k)
            if (w[k]) return 64 * k + 64 - std::countl_zero(w[k]);
        return 0;
    }

    Bits operator|(const Bits& o) const {
        Bits b;
        for (int k = 0; k < W; ++k) b.w[k] = w[k] | o.w[k];
        return b;
    }
    Bits operator&(const Bits& o) const {
        Bits b;
        for (int k = 0; k < W; ++k) b.w[k] = w[k] & o.w[k];
        return b;
    }
    Bits operator^(const Bits& o) const {
        Bits b;
        for (int k = 0; k < W; ++k) b.w[k] = w[k] ^ o.w[k];
        return b;
    }
    Bits minus(const Bits& o) const {  // this & ~o
        Bits b;
        for (int k = 0; k < W; ++k) b.w[k] = w[k] & ~o.w[k];
        return b;
    }
    Bits& operator|=(const Bits& o) {
        for (int k = 0; k < W; ++k) w[k] |= o.w[k];
        return *this;
    }
    Bits& operator&=(const Bits& o) {
        for (int k = 0; k < W; ++k) w[k] &= o.w[k];
        return *this;
    }
    Bits& operator^=(const Bits& o) {
        for (int k = 0; k < W; ++k) w[k] ^= o.w[k];
        return *this;
    }
    bool intersects(const Bits& o) const {
        for (int k = 0; k < W; ++k)
            if (w[k] & o.w[k]) return true;
        return false;
    }
    bool operator==(const Bits& o) const { return w == o.w; }
    bool operator!=(const Bits& o) const { return w != o.w; }
    // as Python compares the ints: the highest word first
    bool operator<(const Bits& o) const {
        for (int k = W - 1; k >= 0; --k)
            if (w[k] != o.w[k]) return w[k] < o.w[k];
        return false;
    }
    uint64_t hash() const {
        uint64_t h = 0x9E3779B97F4A7C15ull;
        for (int k = 0; k < W; ++k) {
            h ^= w[k] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
            h *= 0xBF58476D1CE4E5B9ull;
        }
        return h ^ (h >> 31);
    }

    // Calls f(i) for every element i, ascending.
    template <class F>
    void each(F&& f) const {
        for (int k = 0; k < W; ++k) {
            uint64_t x = w[k];
            while (x) {
                f(64 * k + std::countr_zero(x));
                x &= x - 1;
            }
        }
    }
};

}  // namespace dcmap
