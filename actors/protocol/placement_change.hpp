// A new placement of a model's sparse buckets and dense blocks from its old one and a new shard
// count: what a change of the number of shards moves.
//
// Both rules move only what must move and are deterministic (the same old placement and size
// always give the same new one):
// - buckets: each of the P shards is owed ⌊B/P⌋ or ⌈B/P⌉ buckets (the B mod P larger shares go
//   to the shards holding the most buckets now, ties to the lower index); a shard keeps its
//   lowest-numbered buckets up to its share, and the buckets of removed shards and those over a
//   share go, in bucket order, to the shards below theirs, lower index first. Growing a
//   round-robin placement from 2 shards to 3 moves a third of the buckets; from P to P (balanced)
//   none.
// - dense blocks: a block stays on its shard (still there) while that shard's floats stay within
//   ⌈F/P⌉; the rest go largest first (ties: lower block id) to the shard holding the fewest floats
//   (ties: lower index), as block_layout places them. The result is within one block of perfectly
//   balanced.
//
// Today's runs recompute the dense placement from the size alone (block_layout's LPT), so a
// restore into another size uses block_layout; dense_after_resize is the rule for a placement
// stored with the spec.
#pragma once

#include <cstdint>
#include <vector>

namespace actorps {

/// The owner of each bucket after a change to `shards` shards (1 ≤ shards ≤ buckets, ≤ 65 536),
/// from `before` (each bucket's owner, any shard count). Throws std::invalid_argument for an
/// empty `before` or a shard count out of range.
std::vector<uint16_t> buckets_after_resize(const std::vector<uint16_t>& before, int shards);

/// How many entries of `before` and `after` differ (buckets or blocks moved).
std::size_t moved_count(const std::vector<uint16_t>& before, const std::vector<uint16_t>& after);

/// The owner of each dense block after a change to `shards` shards (≥ 1): `sizes[i]` floats of
/// block i, `before[i]` its owner (any shard count; same length as sizes). Throws
/// std::invalid_argument when the lengths differ or shards < 1 or > 65 536.
std::vector<uint16_t> dense_after_resize(const std::vector<uint32_t>& sizes,
                                         const std::vector<uint16_t>& before, int shards);

} // namespace actorps
