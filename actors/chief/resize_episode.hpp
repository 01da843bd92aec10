// A resize episode: the actor that moves a run onto another number of shards at a clock
// boundary, spawned by the chief (resize.cpp has the chief's steps around it) once every shard
// has handed it its state at that clock and the workers are stopped. The chief asks it (resize);
// the answer is its report: what moved, or why it could not. resize_episode.cpp draws its steps.
#pragma once

#include "actors/protocol/messages.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

namespace actorps {

/// A resize episode: (resize) -> the bytes of the buckets' rows and the dense blocks (with
/// their optimizer state) that changed shard, the milliseconds the states took to cut and those
/// the shards took to restore them; or the error that stopped it (shard_lost: a shard was lost
/// while taking its new state). Asked once; it quits after answering, or once the actor that
/// spawned it goes down.
using resize_episode_actor =
  caf::typed_actor<caf::replies_to<resize_atom>::with<uint64_t, double, double>>;

/// What a resize episode is given: everything it needs, nothing of the chief's state.
struct resize_plan {
  train_spec after;                    ///< the run's spec at the new size (resized_spec)
  /// Every old shard's state at the clock of the change (ShardCheckpoint, in shard order,
  /// under the old spec).
  std::vector<wire_buffer> states;
  /// The shards of the new size, in shard order: the old ones that stay, then the new ones.
  std::vector<ps_shard_actor> shards;
  std::vector<uint32_t> incarnations;  ///< every worker's, which the shards admit from now on
  std::chrono::milliseconds request_timeout{std::chrono::minutes(2)};
};

/// Spawns a resize episode; it quits once `parent` goes down.
resize_episode_actor spawn_resize_episode(caf::actor_system& sys, caf::actor parent,
                                          resize_plan plan);

} // namespace actorps
