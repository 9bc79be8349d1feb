// The random stream of Python's random.Random: MT19937 and random() as CPython's
// _randommodule.c computes them (genrand_uint32, genrand_res53). The state is taken from
// and given back as Random.getstate()'s 624 words and position, so the native engine and
// the Python one draw the same numbers from the same seed.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>

namespace dcmap {

class PythonRandom {
   public:
    static constexpr int N = 624;

    // from getstate()[1]: 624 words, then the position (0 .. 624)
    void set_state(const std::array<uint32_t, N>& words, uint32_t position) {
        if (position > N) throw std::invalid_argument("a random state's position must be at most 624");
        mt_ = words;
        index_ = position;
    }
    const std::array<uint32_t, N>& words() const { return mt_; }
    uint32_t position() const { return index_; }

    // random.random(): a double in [0, 1) with 53 random bits
    double random() {
        uint32_t a = next() >> 5, b = next() >> 6;
        return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
    }

   private:
    std::array<uint32_t, N> mt_{};
    uint32_t index_ = N + 1;

    uint32_t next() {
        static constexpr int M = 397;
        static constexpr uint32_t MATRIX_A = 0x9908b0dfu, UPPER = 0x80000000u, LOWER = 0x7fffffffu;
        if (index_ >= N) {
            int k = 0;
            for (; k < N - M; ++k) {
                uint32_t y = (mt_[k] & UPPER) | (mt_[k + 1] & LOWER);
                mt_[k] = mt_[k + M] ^ (y >> 1) ^ ((y & 1u) ? MATRIX_A : 0u);
            }
            for (; k < N - 1; ++k) {
                uint32_t y = (mt_[k] & UPPER) | (mt_[k + 1] & LOWER);
                mt_[k] = mt_[k + (M - N)] ^ (y >> 1) ^ ((y & 1u) ? MATRIX_A : 0u);
            }
            uint32_t y = (mt_[N - 1] & UPPER) | (mt_[0] & LOWER);
            mt_[N - 1] = mt_[M - 1] ^ (y >> 1) ^ ((y & 1u) ? MATRIX_A : 0u);
            index_ = 0;
        }
        uint32_t y = mt_[index_++];
        y ^= (y >> 11);
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        y ^= (y >> 18);
        return y;
    }
};

}  // namespace dcmap
