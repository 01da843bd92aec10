// How a Criteo display-ads row becomes numbers: the 64-bit key of a categorical value, and the
// transform of an integer feature. Fixed forever: trained models and checkpoints hold these keys.
//
// Why one key space with the field in the top byte: a CTR model keeps all 26 fields in one
// sparse table, so a worker sends one message per shard instead of 26, while the field of every
// key stays recoverable (criteo_field_of) to cut per-field vocabularies at export. The same
// value in two fields gives two keys.
#pragma once

#include "actors/ps/splitmix64.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace actorps {

inline constexpr int criteo_dense_fields = 13;        ///< I1..I13, integers
inline constexpr int criteo_categorical_fields = 26;  ///< C1..C26, hashed to keys
/// Per line: the label, then I1..I13, then C1..C26, separated by tabs.
inline constexpr int criteo_line_fields = 1 + criteo_dense_fields + criteo_categorical_fields;

/// The low 56 bits of a key: the hash of the value.
inline constexpr uint64_t criteo_value_mask = (uint64_t{1} << 56) - 1;

/// A 64-bit hash of `value`'s bytes: the length, then each 8-byte little-endian word (the last
/// one zero-padded) absorbed through splitmix64's finaliser. One multiply chain per 8 bytes,
/// so the 8-hex-digit values of Criteo cost one word each.
constexpr uint64_t criteo_value_hash(std::string_view value) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ value.size();  // "ab" and "ab\0" differ
  for (size_t i = 0; i < value.size(); i += 8) {
    uint64_t word = 0;
    for (size_t b = 0; b < 8 && i + b < value.size(); ++b)
      word |= uint64_t{static_cast<unsigned char>(value[i + b])} << (8 * b);
    h = splitmix64_mix(h ^ word) + 0x632be59bd9b4e019ull;
  }
  return splitmix64_mix(h);
}

/// The key of categorical field `field` (0..25 for C1..C26) holding `value`:
/// (field << 56) | the value's hash in 56 bits. An empty (missing) value's key is `field << 56`
/// itself (low bits 0), which no present value gets: a hash whose low 56 bits are 0 becomes 1.
///
///   criteo_key(2, "68fd1e64") ==
///       (uint64_t{2} << 56 | (criteo_value_hash("68fd1e64") & criteo_value_mask))
///   criteo_key(2, "") == uint64_t{2} << 56
constexpr uint64_t criteo_key(int field, std::string_view value) {
  const uint64_t field_bits = static_cast<uint64_t>(field) << 56;
  if (value.empty()) return field_bits;
  const uint64_t low = criteo_value_hash(value) & criteo_value_mask;
  return field_bits | (low == 0 ? 1 : low);
}

/// The categorical field (0..25) a key of criteo_key belongs to.
constexpr int criteo_field_of(uint64_t key) { return static_cast<int>(key >> 56); }

/// The model's input for integer feature value `x`: log(1 + max(x, 0)). The reader gives a
/// missing value 0 as well (as it gives a negative one): the usual DLRM preprocessing.
///
///   criteo_dense_value(0) == 0, criteo_dense_value(-3) == 0, criteo_dense_value(9) == log(10)
inline float criteo_dense_value(int64_t x) {
  return x > 0 ? static_cast<float>(std::log1p(static_cast<double>(x))) : 0.0f;
}

} // namespace actorps
