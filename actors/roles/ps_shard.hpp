// A parameter shard.
//
// Owns the blocks the layout assigns to it (one contiguous buffer) and their optimizer state,
// and the clock table (clock_table.hpp): clocks[w] = clocks worker w has finished (pushed).
// With min = the smallest clock over live workers and bound = the run's staleness bound, a pull
// for clock c is answered when min >= c - bound (sync: bound 0; ssp: s; async: never held). A
// pull that may not be answered yet is held as a response promise and delivered the moment a
// push, a leave or an admit raises min — nothing polls or sleeps.
//
// Gradients: ssp and async apply every push at once with learning rate lr / live_workers, so
// that one round of pushes moves as far as one averaged step; sync keeps each worker's gradient
// for the clock and applies their mean once, with lr, when the last live worker has pushed
// (summed in worker order, so the result does not depend on arrival order).
//
// Every reply carries newest_clock, the clock of the newest gradient its values include (sync:
// set when a clock's mean is applied, not when its first push arrives).
//
// Every push is validated in full before it touches state; an invalid one is counted in
// shard_stats::dropped, logged in one line and answered with an error. A gradient value beyond
// the shard's bound (value_bounds.hpp) makes the push invalid too (gradients_refused). An update
// that would leave a parameter beyond its bound, or a non-finite optimizer state, is refused
// with the state unchanged (updates_refused): dense blocks all or none, each sparse row alone.
// Those refusals are logged at most once a second, with a count of the ones in between.
//
// Hot standby (--replicas 1, replication.hpp): a shard told of a standby (backup) hands it its
// state, then applies each push and clock-table change only once the standby has acknowledged
// it; the same actor type serves as the standby (replicate) and, promoted, as the primary.
#pragma once

#include "actors/protocol/messages.hpp"
#include "kernels/value_bounds.hpp"

#include <caf/actor_system.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace actorps {

/// What a shard takes from its own process, never from a message: a stranger who can reach the
/// shard cannot move these (deployment.hpp: every replica gets the same command line).
struct shard_config {
  /// The directory checkpoint files may go into, or one above it: a checkpoint request naming
  /// a directory outside it (by `..` or a symlink too) is refused, counted and logged, nothing
  /// written. "": this shard writes no checkpoint files (it still hands out their bytes).
  std::string checkpoint_root;
  value_bounds bounds;
  /// A standby in another process than its primary (--replicas 1, one process per task): the
  /// ps task its primary runs in, the only one besides the chief whose replication it takes.
  /// -1: a standby in its primary's process (simulate), or no standby.
  int32_t primary_task = -1;
  /// Messages refused as not authorised on their way to this shard outside its actor (its data
  /// link's, link_authorisation.hpp; its ps task's), so far: its counters' refused_unauthorised
  /// adds them to its own. Null: none.
  std::function<uint64_t()> refusals_elsewhere = nullptr;
};

/// Spawns an uninitialised shard with index `shard`; it serves once it has received init.
ps_shard_actor spawn_ps_shard(caf::actor_system& sys, int32_t shard, shard_config cfg = {});

} // namespace actorps
