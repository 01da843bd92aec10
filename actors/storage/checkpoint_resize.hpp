// A checkpoint's shard states cut again for another number of shards (a stop-the-world resize:
// `--resume --ps N` from a checkpoint of any shard count).
//
// Each new shard gets, from whichever old shards held them:
// - the dense blocks the new layout gives it (block_layout(spec): spec.block_shards, or when
//   empty the largest-first rule of the shard count), with their optimizer slots; the old
//   shards' blocks are found by id, under whichever placement they were written;
// - the sparse rows of the buckets spec.bucket_shards gives it (rows, optimizer state, touches,
//   Adam steps, row clocks) and the exact pending admission counts of keys in those buckets;
// - a table's admission sketch (--admission-memory), which cannot be split by key: the counters'
//   element-wise maximum over the old shards that held any of its buckets (every key's estimate
//   stays at or above its true count, as a count-min sketch promises; colliding keys may be
//   admitted a little earlier), with the decay cursor of the old shard that held most of them;
// - the old shards' clock; the newest update's clock and the optimizer's step count (Adam's
//   bias correction) are the largest of the old shards' (in sync mode they are all equal).
// The result is what a run of spec.shards shards would have written, byte for byte in the
// parameters and rows, so that sync training goes on with the same math.
#pragma once

#include "actors/protocol/checkpoint_codec.hpp"

#include <vector>

namespace actorps {

/// The whole shard states `saved` (one file per old shard, in shard order: a checkpoint's, or a
/// chain folded by load_chain) cut for `spec` (this run's: its shards and bucket placement), one
/// file per new shard, under `spec`. The model, its block cut and its tables must be the
/// saved one's (incompatibility says so). Throws std::invalid_argument naming what does not fit.
std::vector<wire_buffer> resize_shard_files(const std::vector<wire_buffer>& saved,
                                            const train_spec& spec);

/// The bucket placement a run of `shards` shards resumed from a checkpoint written under
/// `saved` uses: the checkpoint's own at its shard count, else buckets_after_resize of it
/// (placement_change.hpp); empty for a model without sparse tables.
std::vector<uint16_t> resumed_placement(const train_spec& saved, int shards);

/// Whether a checkpoint written under `saved` (its run.capnp's spec) must be cut again to restore
/// under `spec`: another shard count, bucket placement or dense placement.
bool needs_resize(const train_spec& saved, const train_spec& spec);

} // namespace actorps
