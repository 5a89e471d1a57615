// Small deterministic PRNG (xoshiro256**, seeded by splitmix64) with its own
// distributions, so a --seed gives the same requests with any standard library.
#pragma once

#include <cmath>
#include <cstdint>

namespace exch::bench {

class Rng {
 public:
  explicit Rng(std::uint64_t seed, std::uint64_t stream = 0) {
    std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * (stream + 1));
    for (auto& s : s_) s = splitmix(x);
  }

  std::uint64_t next() {
    std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [lo, hi] (inclusive), unbiased (rejection sampling).
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
    if (span == 0) return static_cast<std::int64_t>(next());  // full range
    std::uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    std::uint64_t r;
    do r = next();
    while (r >= limit);
    return lo + static_cast<std::int64_t>(r % span);
  }

  // Uniform in [0, 1).
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Exponential with the given mean (inverse transform).
  double exponential(double mean) { return -mean * std::log(1.0 - uniform01()); }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t s_[4];
};

}  // namespace exch::bench
