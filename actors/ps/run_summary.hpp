// What a finished run returns to whoever started it (train(), train_cluster()): its settings,
// progress, final test metrics, each shard's counters and the final parameters. CAF's
// serialisation of these types is the runtime's (actors/protocol/messages.hpp).
#pragma once

#include "actors/ps/shared_bytes.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// One slice's AUC in an evaluation (--slice-auc): the test rows whose slice field holds `key`.
struct slice_report {
  uint64_t key = 0;
  int64_t rows = 0;
  int64_t positives = 0;
  double auc = 0;  ///< NaN: the slice holds one class only
};

/// A shard's counters.
struct shard_stats {
  int32_t shard = 0;
  uint64_t updates = 0;         ///< optimizer updates applied
  uint64_t pushes = 0;          ///< valid pushes accepted
  uint64_t dropped = 0;         ///< invalid messages counted and dropped
  uint64_t pulls_served = 0;
  uint64_t pulls_held = 0;      ///< pulls that had to wait for the consistency rule
  int64_t max_staleness = 0;    ///< max over replies of (requested clock − min clock)
  int64_t min_clock = 0;
  std::vector<uint64_t> table_rows;  ///< rows of each sparse table on this shard (spec order)
  uint64_t table_bytes = 0;          ///< memory its sparse tables hold (sparse_table::memory_bytes)
  uint64_t gradients_refused = 0;    ///< pushes dropped for a gradient value beyond the bound
  uint64_t updates_refused = 0;      ///< dense updates and sparse row updates refused: a
                                     ///< parameter would have left its bound (state unchanged)
  uint64_t checkpoints_refused = 0;  ///< checkpoint requests outside the shard's root
  float max_gradient = 0;            ///< the largest |gradient value| seen in every 16th push
                                     ///< accepted (a statistic, not a bound)
  uint64_t refused_unauthorised = 0; ///< messages its sender's task may not send (TLS roles)
  uint64_t pushes_deduplicated = 0;  ///< re-sent pushes a promoted standby had applied already
  uint64_t replicated_bytes = 0;     ///< sent to its standby: forwarded pushes and state images
  uint64_t pushed_bytes = 0;         ///< wire bytes of the pushes accepted (--wire-precision)
  uint64_t replies_streamed = 0;     ///< push_pull replies sent ahead in parts (reply_stream.hpp)
  uint64_t pushes_streamed = 0;      ///< pushes applied as their bytes arrived (request_progress.hpp)
  uint64_t pushes_cut = 0;           ///< of those, cut off before their end: nothing changed
  uint64_t pushes_declined = 0;      ///< offered while arriving but read whole first (sync, ...)
  uint64_t norms_refused = 0;        ///< pushes refused: gradient norm beyond
                                     ///< --gradient-norm-bound times the recent median
  float max_norm_ratio = 0;          ///< the largest norm / recent median of a push accepted
                                     ///< (a statistic for choosing --gradient-norm-bound)
  std::vector<uint64_t> table_rows_peak;  ///< the most rows each table has held (since the
                                          ///< shard's tables were installed: init or restore)
  uint64_t rows_evicted = 0;         ///< sparse rows evicted (--evict-after, --max-rows-per-shard)
  uint64_t pending_keys = 0;         ///< keys counted for admission, without a row yet
                                     ///< (with --admission-memory: the sketch's estimate)
  uint64_t admission_bytes = 0;      ///< memory the pending admission counts hold (of table_bytes)
};

/// What a finished run returns to whoever started it.
struct run_summary {
  std::string mode;
  int32_t staleness_bound = 0;   ///< -1 for async
  int32_t workers = 0;
  int32_t shards = 0;
  int64_t clocks = 0;            ///< clocks trained: the most any worker finished (from clock 0)
  int64_t samples = 0;           ///< training rows behind the model: every worker's own clocks
  double wall_s = 0;             ///< seconds from training's start to its end (or its stop)
  int64_t planned_clocks = 0;    ///< the run's length asked for (--steps, --epochs)
  int64_t planned_samples = 0;   ///< the rows those clocks are over every worker
  std::vector<int64_t> worker_clocks;  ///< each worker's finished clocks (from clock 0)
  double end_s = 0;              ///< seconds from training's start to the summary (the final
                                 ///< checkpoint and evaluation included)
  bool workers_lost = false;     ///< every worker was lost before the run's last clock
  bool final_checkpoint_failed = false;  ///< the end's checkpoint could not be written
  int64_t last_checkpoint = -1;  ///< the clock of the newest complete checkpoint; -1: none
  /// The clock of the parameters the final test figures are of: the clocks trained when the
  /// final parameters were evaluated, an earlier one when only an earlier evaluation could run
  /// (the evaluator lost); -1: not evaluated.
  int64_t final_eval_clock = -1;
  double samples_per_s = 0;
  /// Evaluations that scored test rows; 0: the run was not evaluated (no evaluator, an empty
  /// test set) and the final test figures below mean nothing.
  int32_t evaluations = 0;
  double final_test_accuracy = 0;
  double final_test_loss = 0;
  double final_test_auc = -1;    ///< binary models; -1: the model reports none
  double final_test_gauc = -1;   ///< binary models with --gauc-group; -1: none
  double final_test_calibration = -1;  ///< binary models; -1: the model reports none
  std::vector<slice_report> final_test_slices;  ///< binary models with --slice-auc
  int64_t final_test_slice_rest_rows = -1;      ///< -1: none
  int64_t max_staleness = 0;
  uint64_t dropped_messages = 0;
  uint64_t gradients_refused = 0;    ///< over every shard: pushes beyond --max-gradient
  uint64_t updates_refused = 0;      ///< updates and sparse rows beyond --max-parameter
  uint64_t checkpoints_refused = 0;  ///< checkpoint requests outside a shard's root
  uint64_t refused_unauthorised = 0; ///< over every shard: messages their senders may not send
  uint64_t norms_refused = 0;        ///< over every shard: pushes beyond --gradient-norm-bound
  float max_norm_ratio = 0;          ///< the largest norm / recent median the shards accepted
  float max_gradient = 0;            ///< the largest |gradient value| the shards sampled (every
                                     ///< 16th push accepted)
  float max_parameter = 0;           ///< the largest final |parameter| (the rows snapshotted)
  std::string backend;
  int32_t failures = 0;          ///< roles lost (killed, crashed, unreachable)
  int32_t recoveries = 0;        ///< losses the run recovered from (replaced, restored)
  int32_t failovers = 0;         ///< lost primaries whose standby took over (--replicas 1)
  int32_t rereplications = 0;    ///< standbys built from a live primary after the first ones
  int32_t checkpoints = 0;       ///< checkpoints completed
  int32_t checkpoint_failures = 0;  ///< checkpoints that failed to write (the previous one stays)
  std::string checkpoint_error;  ///< why the last one that failed did
  int64_t resumed_from = -1;     ///< the checkpoint clock the run resumed from; -1: none
  std::string stopped_by;        ///< the signal that stopped the run early; "": it ran to its end
  int64_t stopped_at = -1;       ///< the global clock it stopped at (stopped_by set)
  std::vector<shard_stats> shard_stats_list;
  /// One ShardParameters message per shard (final_parameters() reads them); with every sparse
  /// row (an allRows snapshot) when the chief was asked for them (chief_config::final_rows).
  std::vector<shared_bytes> final_parameters;
  /// The dense placement the final parameters are of (train_spec::block_shards, over `shards`
  /// shards): a --resize changes it; empty: the largest-first rule.
  std::vector<uint16_t> final_block_shards = {};
};

} // namespace actorps
