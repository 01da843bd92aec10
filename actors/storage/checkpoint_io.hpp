// The actor that touches the disk for checkpoints: one per shard (its file) and one for the
// chief (directory, run file, manifest, pruning, loading). Spawned detached, so an fsync
// blocks only its own thread; every failure comes back as a checkpoint_failed error naming the
// file (actors/checkpoint_store.hpp does the work).
#pragma once

#include "actors/protocol/messages.hpp"
#include "kernels/value_bounds.hpp"

#include <caf/actor_system.hpp>

#include <string>

namespace actorps {

struct checkpoint_io_options {
  std::string run_id;   ///< the chief's: names the run in each new checkpoint directory, and
                        ///< loading (a rollback) takes only this run's checkpoints
  int64_t fail_at = -1; ///< fault injection: committing the checkpoint at this clock fails as
                        ///< a full or read-only disk would (--kill disk@checkpoint=C)
  float max_parameter = default_max_parameter;  ///< loading refuses a checkpoint beyond it
  std::string key;      ///< --checkpoint-key's: manifests are signed, and loading needs it
                        ///< (checkpoint_signing.hpp); empty: unsigned
};

checkpoint_io_actor spawn_checkpoint_io(caf::actor_system& sys, checkpoint_io_options opts = {});

} // namespace actorps
