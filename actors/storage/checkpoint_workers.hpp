// A checkpoint's data resumed by another number of workers (a stop-the-world change of
// workers: `--resume --workers N`), or by workers that had plans when it was taken (a run whose
// number of workers changed while it trained: --resize workers=N@clock=C).
//
// What no worker had trained by the checkpoint's clock is what a live change would hand on
// (data_plan.hpp): each old worker's part from its position (or its plan's rest), shared out
// among the new workers in contiguous shares. So the resumed run trains every planned minibatch
// once, as many rows as the run never stopped.
#pragma once

#include "actors/protocol/checkpoint_codec.hpp"

#include <vector>

namespace actorps {

struct resumed_data {
  /// Per worker of the resumed run, its minibatches from the checkpoint's clock on; empty: each
  /// worker goes on in its own part where its position says (the checkpoint's own workers, and
  /// none of them had a plan).
  std::vector<data_plan> plans;
  /// The minibatches every worker had trained by the checkpoint's clock.
  int64_t batches_trained = 0;
  /// The most minibatches one plan holds (the clocks the resumed run trains).
  int64_t longest = 0;
};

/// What `workers` workers resume with from `saved` (its run.capnp). Throws
/// std::invalid_argument when they cannot: another number of workers over a directory read
/// as a stream (its file positions are each worker's own).
resumed_data resumed_plans(const run_checkpoint& saved, int workers);

} // namespace actorps
