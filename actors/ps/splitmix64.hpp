// splitmix64: a 64-bit counter passed through an invertible mixing function. Integer arithmetic
// only, so every platform produces the same stream (std:: distributions do not).
#pragma once

#include <cstdint>

namespace actorps {

/// splitmix64's finaliser (Stafford's "Mix13"): a bijection on 64-bit integers whose every
/// output bit depends on every input bit. Fixed forever: key placement (kernels/sparse) and
/// seeded streams depend on its exact values.
constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class splitmix64 {
public:
  explicit splitmix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ull;
    return splitmix64_mix(state_);
  }

  /// Uniform in [0, 1) on a 2^-24 grid (exact in float and double).
  double next_unit() { return static_cast<double>(next() >> 40) * 0x1p-24; }

private:
  uint64_t state_;
};

} // namespace actorps
