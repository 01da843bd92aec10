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

float max_abs(const float* values, std::size_t n) {
  // On the bits: for x >= 0 the float order is the unsigned order of the bits, and inf and NaN
  // have larger bits than any finite float (NaN's the largest). One max-reduce over |x|'s bits
  // vectorises, unlike fabs and compares with NaN semantics.
  uint32_t largest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    bits &= 0x7fffffffu;
    largest = bits > largest ? bits : largest;
  }
  float out;
  std::memcpy(&out, &largest, sizeof out);
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
