#include "kernels/value_bounds.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace actorps {

std::string value_text(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string invalid_bound(float bound) {
  if (std::isfinite(bound) && bound > 0) return "";
  return "must be positive and finite, got " + value_text(bound);
}

// Both on the bits: for x >= 0 the float order is the order of the bits as an integer, and inf
// and NaN have larger bits than any finite float (NaN's the largest). Signed int32, as |x|'s bits
// are below 2^31: SSE2 (the build's baseline) compares signed 32-bit lanes in one instruction,
// unsigned ones not at all, which made an unsigned max-reduce twice as slow.

float max_abs(const float* values, std::size_t n) {
  int32_t largest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    int32_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    bits &= 0x7fffffff;
    largest = bits > largest ? bits : largest;
  }
  float out;
  std::memcpy(&out, &largest, sizeof out);
  return out;
}

bool all_within(const float* values, std::size_t n, float bound) {
  int32_t limit;
  std::memcpy(&limit, &bound, sizeof limit);
  int32_t beyond = 0;  // an OR of compares: cheaper than a max-reduce
  for (std::size_t i = 0; i < n; ++i) {
    int32_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    beyond |= static_cast<int32_t>((bits & 0x7fffffff) > limit);
  }
  return beyond == 0;
}

bool copy_within(float* to, const float* values, std::size_t n, float bound) {
  int32_t limit;
  std::memcpy(&limit, &bound, sizeof limit);
  int32_t beyond = 0;
  for (std::size_t i = 0; i < n; ++i) {
    int32_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    std::memcpy(to + i, &bits, sizeof bits);
    beyond |= static_cast<int32_t>((bits & 0x7fffffff) > limit);
  }
  return beyond == 0;
}

float sum_of_squares(const float* values, std::size_t n) {
  constexpr std::size_t lanes = 16;
  float acc[lanes] = {};
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::size_t l = 0; l < lanes; ++l) acc[l] += values[i + l] * values[i + l];
  float out = 0;
  for (; i < n; ++i) out += values[i] * values[i];
  for (float a : acc) out += a;
  return out;
}

std::optional<std::size_t> first_outside(const float* values, std::size_t n, float bound) {
  for (std::size_t i = 0; i < n; ++i)
    if (!(std::fabs(values[i]) <= bound)) return i;
  return std::nullopt;
}

std::string gradient_refusal(const float* values, std::size_t n, float bound,
                             const std::string& where) {
  auto at = first_outside(values, n, bound).value_or(0);
  auto text = value_text(n ? values[at] : 0.0f);
  if (n && !std::isfinite(values[at])) return "gradient value " + text + " of " + where;
  return "gradient value " + text + " of " + where + " is beyond the bound ±" + value_text(bound);
}

} // namespace actorps
