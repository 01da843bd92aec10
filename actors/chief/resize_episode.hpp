// A resize episode: the actor that moves a run onto another number of shards at a clock
// boundary, spawned by the chief (resize.cpp has the chief's steps around it) once every shard
// has handed over, at that clock, what leaves it (its dense blocks, and the rows of the buckets
// the new placement gives another shard, addressed to that shard) and the workers are stopped.
// The chief asks it (resize); the answer is its report: what moved, or why it could not.
// resize_episode.cpp draws its steps.
#pragma once

#include "actors/protocol/messages.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

namespace actorps {

/// A resize episode: (resize) -> the bytes of the buckets' rows and the dense blocks (with
/// their optimizer state) that changed shard, the milliseconds the dense hand-overs took to read
/// and cut and those the shards took to take their parts; or the error that stopped it. Asked once;
/// it quits after answering, or once the actor that spawned it goes down.
/// (resize, s, replacement): shard s of the new size, one the resize spawned (it held nothing
/// before), was lost and spawned again: its part goes to the replacement. The loss of any other
/// shard is the chief's (its rows of the buckets it kept are gone: a rollback).
using resize_episode_actor =
  caf::typed_actor<caf::replies_to<resize_atom>::with<uint64_t, double, double>,
                   caf::reacts_to<resize_atom, int32_t, ps_shard_actor>>;

/// What a resize episode is given: everything it needs, nothing of the chief's state.
struct resize_plan {
  train_spec after;                    ///< the run's spec at the new size (resized_spec)
  /// Every old shard's hand-over of its dense blocks and admission sketches at the clock of the
  /// change (ShardCheckpoint, in shard order, under the old spec).
  std::vector<wire_buffer> states;
  /// For each shard of the new size, the rows the old shards hand it (the hand-overs' [1 + s]:
  /// the buckets it gains), passed on as they are.
  std::vector<std::vector<wire_buffer>> rows;
  /// The shards of the new size, in shard order: the old ones that stay (each keeps the rows of
  /// its buckets that stay), then the new ones (empty).
  std::vector<ps_shard_actor> shards;
  /// For each shard of the new size, the rows copied ahead to it while the run trained
  /// (copy_ahead.cpp): the hand-overs' rows are what changed since. It holds them aside already,
  /// unless `copy_again` says it is a shard spawned since (given them before its part).
  std::vector<std::vector<wire_buffer>> copied;
  std::vector<bool> copy_again;
  std::vector<uint32_t> incarnations;  ///< every worker's, which the shards admit from now on
  std::chrono::milliseconds request_timeout{std::chrono::minutes(2)};
};

/// Spawns a resize episode; it quits once `parent` goes down.
resize_episode_actor spawn_resize_episode(caf::actor_system& sys, caf::actor parent,
                                          resize_plan plan);

} // namespace actorps
