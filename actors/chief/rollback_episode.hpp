// A rollback episode: the actor that puts every shard back to the newest checkpoint once a lost
// shard is back (rollback.cpp has the chief's steps around it). The chief spawns it and asks it
// (restore); the answer is its report: what every shard now holds, or why it could not.
// rollback_episode.cpp draws its steps.
#pragma once

#include "actors/protocol/messages.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

/// A rollback episode: (restore) -> the checkpoint every shard was restored from, without its
/// shard files (dir empty: none was found, every shard holds the seeded initial values at clock
/// 0), or the error that stopped it (shard_lost: a shard was lost while restoring).
/// Asked once; it quits after answering, or once the actor that spawned it goes down.
using rollback_episode_actor = caf::typed_actor<caf::replies_to<restore_atom>::with<loaded_checkpoint>>;

/// What a rollback episode is given: everything it needs, nothing of the chief's state.
struct rollback_plan {
  checkpoint_io_actor io;              ///< reads the run's checkpoints
  std::string dir;                     ///< the run's --checkpoint-dir
  /// Where the run began when none of its own checkpoints is there: --resume's checkpoint,
  /// else --init-from's, else (both null) the initial values.
  std::shared_ptr<const loaded_checkpoint> resumed, init_from;
  train_spec spec;
  std::vector<ps_shard_actor> shards;  ///< every one present, in shard order
  std::vector<uint32_t> incarnations;  ///< every worker's, which the shards admit from now on
  int64_t failed_at = 0;               ///< the global clock the shard was lost at (for the log)
  std::chrono::milliseconds request_timeout{std::chrono::minutes(2)};
};

/// Spawns a rollback episode; it quits once `parent` goes down.
rollback_episode_actor spawn_rollback_episode(caf::actor_system& sys, caf::actor parent,
                                              rollback_plan plan);

/// The restore message of every shard for `ckpt` (under `spec`; a checkpoint of another shard
/// count or placement cut again for it: checkpoint_resize.hpp), or, when null, the seeded
/// initial values at clock 0.
caf::expected<std::vector<wire_buffer>> shard_restore_files(const train_spec& spec,
                                                            const loaded_checkpoint* ckpt);

} // namespace actorps
