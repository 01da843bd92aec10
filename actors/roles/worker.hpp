// A worker: owns its shard of the training data and a trainer from the run's model plug-in
// (actors/model/), and runs pull → trainer step → push once per clock. The push for clock c and
// the pull for c + 1 travel as one push_pull request per shard; the next clock starts when every
// shard has answered (which the shards may delay, to enforce the consistency rule). Where the
// mode allows staleness (ssp with a bound >= 1, async), a dense model's worker (sgd or momentum)
// that trains alone computes clock c + 1 while its push of c is in flight: on the parameters
// pulled for c, moved on by the step its own push is about to take, when c + 1 minus their min
// clock stays within the bound; the reply is applied before clock c + 2 (worker.cpp).
//
// Spawned detached: its kernels block only its own thread, never CAF's scheduler.
#pragma once

#include "actors/protocol/data_plan.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/protocol/parameter_destination.hpp"
#include "actors/ps/dataset.hpp"
#include "kernels/backend_factory.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace actorps {

struct worker_config {
  int32_t index = 0;
  train_spec spec;
  int batch = 64;
  int64_t steps = 0;                       ///< clocks to run (its last clock is steps - 1)
  int64_t start_clock = 0;                 ///< first clock (a replacement's, a rollback's)
  /// Clock c trains minibatch c - data_offset of the worker's data; it runs to clock
  /// steps + data_offset - 1. 0 at the start; a replacement resumes its predecessor's data
  /// position at the clock it enters at (recovery.cpp), so the epoch's rows are each trained once.
  int64_t data_offset = 0;
  /// Its minibatches once the number of workers changed (data_plan.hpp; `steps` is then the
  /// plan's count); empty: part `index` of spec.workers of the data, as at the start.
  data_plan plan;
  uint32_t incarnation = 0;                ///< which spawn of worker `index` this is (Push)
  /// Following a stream (--follow): it computes clock c only once minibatch c + 1 - data_offset
  /// is below follow_until, so that the keys of the next clock's batch are there to pull with
  /// the push (the chief raises it as files come: (stream, until, end)); counted in minibatches,
  /// not clocks, so that a replacement behind the others trains all of its part too; -1: not
  /// following, every clock's batch is there.
  int64_t follow_until = -1;
  /// Computes no clock from this one on (a resize's clock, -1: none): the worker waits there,
  /// its push of the clock before done, until the chief stops it. So the shards' state at that
  /// clock holds exactly every push before it in every mode: in ssp and async a worker ahead of
  /// the others would otherwise have pushed past it, and that push would be trained twice.
  /// Across processes the chief sets it while the worker trains: (pause, clock).
  int64_t pause_at = -1;
  int slow_ms = 0;                         ///< straggler delay added to every step
  /// Computes the next clock while its push is in flight where the mode allows (see above);
  /// false: waits for every reply, as sync and ssp 0 always do.
  bool overlap = true;
  backend_kind backend = backend_kind::cpu; ///< auto: CUDA when this host has a usable GPU
  int device = 0;                          ///< CUDA device index
  std::chrono::milliseconds request_timeout{std::chrono::minutes(2)};
  std::shared_ptr<const dataset> train;
  data_source source;                      ///< where `train` came from; a plug-in that streams
                                           ///< its own data (libsvm) reads its part from here
  std::vector<ps_shard_actor> shards;      ///< index = shard id
  chief_actor chief;                       ///< receives train reports and done
  /// Per shard, or empty: where that shard's data link proxy receives replies for this worker
  /// (destinations_of in remote_shard.hpp); the worker points each at its parameters.
  std::vector<std::shared_ptr<parameter_destination>> destinations;
  bool standbys = false;                   ///< the shards have hot standbys (--replicas 1): a
                                           ///< shard found gone is waited for (reroute)
};

worker_actor spawn_worker(caf::actor_system& sys, worker_config cfg);

} // namespace actorps
