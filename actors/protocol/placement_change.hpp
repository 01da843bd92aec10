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
// A run starts with the dense placement of its size alone (block_layout's LPT, an empty
// train_spec::block_shards); a live resize records dense_after_resize's placement in
// train_spec::block_shards, which block_layout then follows.
#pragma once

#include "actors/protocol/model_spec.hpp"

#include <cstddef>
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

/// `before`'s run at `shards` shards: its buckets placed by buckets_after_resize, its dense
/// blocks by dense_after_resize from their owners under `before`, recorded in block_shards so
/// that every role cuts the same layout; everything else as it was. Throws
/// std::invalid_argument as those rules do, or for a spec block_layout refuses.
train_spec resized_spec(const train_spec& before, int shards);

/// What one placement change moves from shard `from` to shard `to`.
struct placement_move {
  int from = 0;
  int to = 0;
  std::vector<uint32_t> buckets = {};  ///< ascending
  std::vector<uint32_t> blocks = {};   ///< ascending block ids
  std::size_t dense_floats = 0;        ///< the blocks' values (their optimizer slots besides)
};

/// Every move from the placement of `before` to that of `after` (the same model, block cut and
/// number of buckets), by (from, to) ascending; what stays on its shard is in none. Throws
/// std::invalid_argument when the two cut the model or hash the keys differently.
std::vector<placement_move> placement_moves(const train_spec& before, const train_spec& after);

} // namespace actorps
