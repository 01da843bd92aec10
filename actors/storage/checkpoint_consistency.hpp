// A checkpoint's content must agree with itself and with its directory, beyond what checksums
// say: a checkpoint rewritten consistently (every clock set to 10^12, every checksum redone)
// or made by a bug passes the manifest but not these. Loading runs them on every checkpoint.
#pragma once

#include "actors/protocol/wire.hpp"
#include "kernels/value_bounds.hpp"

#include <string>

namespace actorps {

/// What in run.capnp disagrees ("" when nothing does): its clock against the directory's,
/// 0 <= clock <= steps = the spec's total clocks, a positive batch, samples within what
/// `clock` clocks of every worker hold, a finite non-negative wall time, one data position
/// per worker in worker order at the checkpoint's clock and, when the training set's size is
/// recorded, inside that worker's part of it.
std::string run_inconsistency(const run_checkpoint& run, int64_t dir_clock);

/// What in a shard file disagrees with run.capnp ("" when nothing does): its length and
/// checkpoint interval, its newest update within the run.
std::string shard_inconsistency(const shard_checkpoint_view& shard, const run_checkpoint& run);

/// What in a shard file lies beyond the bounds a shard keeps its state in ("" when nothing
/// does): a parameter, dense or sparse, with |value| > max_parameter or not finite, or an
/// optimizer state value that is not finite; names the tensor or table and the value. Each block
/// is found in `layout` by its id (a live resize's part holds only some of a shard's blocks). A
/// checkpoint with such values would restore a state no update could have made: resuming from
/// one trained nothing (every gradient computed from it overflowed) instead of failing.
std::string out_of_bounds(const shard_checkpoint_view& shard, const block_layout& layout,
                          float max_parameter);

} // namespace actorps
