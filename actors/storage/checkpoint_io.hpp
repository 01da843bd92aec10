// The actor that touches the disk for checkpoints: one per shard (its file) and one for the
// chief (directory, run file, manifest, pruning, loading). Spawned detached, so an fsync
// blocks only its own thread; every failure comes back as a checkpoint_failed error naming the
// file (actors/checkpoint_store.hpp does the work).
#pragma once

#include "actors/protocol/messages.hpp"

#include <caf/actor_system.hpp>

namespace actorps {

checkpoint_io_actor spawn_checkpoint_io(caf::actor_system& sys);

} // namespace actorps
