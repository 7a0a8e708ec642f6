// Rng: the search proposer's own random numbers, xoshiro256** seeded through splitmix64, with
// uniform draws by rejection. std:: distributions are implementation-defined, so a resumed run on
// another standard library would propose differently; this never does. Uses: every strategy.
#pragma once
#include <cstdint>

namespace longhaul {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& s : s_) s = splitmix64(x);
  }

  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n); n == 0 gives 0. Unbiased: draws below 2^64 mod n are rejected.
  uint64_t uniform(uint64_t n) {
    if (n == 0) return 0;
    uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    for (;;) {
      uint64_t x = next();
      if (x >= threshold) return x % n;
    }
  }
  int uniform_int(int n) { return n <= 0 ? 0 : int(uniform(uint64_t(n))); }

  // Uniform in [0, 1), 53 random bits.
  double uniform01() { return double(next() >> 11) * 0x1.0p-53; }

  bool coin() { return (next() >> 63) != 0; }

  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace longhaul
