// The key a categorical value becomes in a sparse table: what a serving process computes to
// find a value's row in an export's vocabulary (vocab/C<n>.tsv), the same function the Criteo
// reader applies to every line it trains on. Part of the front door, so that a program (or the
// Python package: actorps.feature_key) need not port it.
#pragma once

#include <cstdint>
#include <string_view>

namespace actorps {

/// The 64-bit key of categorical field `field` holding `value` (its bytes): (field << 56) | the
/// value's 64-bit hash in its low 56 bits (1 when those are 0); a missing (empty) value is
/// field << 56 itself. Fields count from 0 (C1 is field 0, C26 field 25). Fixed forever:
/// trained tables, checkpoints and exports hold these keys; export's metadata.json spells the
/// hash out. Throws std::invalid_argument for a field outside 0..255.
uint64_t feature_key(int field, std::string_view value);

} // namespace actorps
