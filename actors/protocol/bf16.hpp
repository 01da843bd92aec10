// bfloat16 on the wire (--wire-precision bf16): a float32's upper 16 bits (sign, the same 8
// exponent bits, 7 mantissa bits), so narrowing only rounds the mantissa and widening is exact
// (a shift left by 16). Workers may push their dense gradients so, halving the push's bytes;
// parameters (pulls, replies, checkpoints) always travel as float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace actorps {

/// The precision of a Push's dense blocks (schema WirePrecision; the same values).
enum class wire_precision : uint8_t { fp32 = 0, bf16 = 1 };

inline std::optional<wire_precision> parse_wire_precision(const std::string& s) {
  if (s == "fp32") return wire_precision::fp32;
  if (s == "bf16") return wire_precision::bf16;
  return std::nullopt;
}

inline const char* to_string(wire_precision p) {
  return p == wire_precision::bf16 ? "bf16" : "fp32";
}

/// float32 → bf16, rounded to nearest, ties to even (on the 16 bits dropped). ±inf stays
/// ±inf; a NaN stays a NaN (a quiet one: rounding its payload away could otherwise leave the
/// pattern of inf); a finite value beyond bf16's largest rounds to ±inf, as IEEE rounding does.
/// Branch-free, so that the loop below vectorises.
inline uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return static_cast<uint16_t>(nan ? (bits >> 16) | 0x0040u : rounded);
}

/// bf16 → float32: exact.
inline float from_bf16(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline void to_bf16(const float* in, std::size_t n, uint16_t* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = to_bf16(in[i]);
}

inline void from_bf16(const uint16_t* in, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = from_bf16(in[i]);
}

/// The value a float32 gradient arrives as at the shard under precision `p`.
inline float on_the_wire(float f, wire_precision p) {
  return p == wire_precision::bf16 ? from_bf16(to_bf16(f)) : f;
}

} // namespace actorps
