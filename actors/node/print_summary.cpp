#include "actors/node/print_summary.hpp"

#include "actors/deploy/exit_codes.hpp"
#include "actors/protocol/console.hpp"

#include <cstdio>
#include <string>

namespace actorps {

int print_summary(const run_summary& s) {
  console::process().end_progress();  // the summary starts on a line of its own
  std::printf("summary: mode %s (staleness bound %d), %d workers, %d shards, backend %s\n",
              s.mode.c_str(), s.staleness_bound, s.workers, s.shards, s.backend.c_str());
  // What was trained; short of what was asked for (a stop, every worker lost, a worker left out
  // after --max-replacements), both, and each worker's own clocks.
  const bool short_of_plan = s.clocks < s.planned_clocks || s.samples < s.planned_samples;
  std::string trained = std::to_string(s.clocks) + " clocks, " + std::to_string(s.samples)
                        + " samples";
  if (short_of_plan) {
    trained = std::to_string(s.clocks) + " of " + std::to_string(s.planned_clocks)
              + " clocks (per worker:";
    for (auto c : s.worker_clocks) trained += " " + std::to_string(c);
    trained += "), " + std::to_string(s.samples) + " of " + std::to_string(s.planned_samples)
               + " samples";
  }
  if (s.resumed_from < 0)
    std::printf("  %s in %.2f s = %.0f samples/s\n", trained.c_str(), s.wall_s, s.samples_per_s);
  else  // the model holds every sample since clock 0; the throughput is this run's alone
    std::printf("  %s; this run from clock %lld: %.0f samples in %.2f s = %.0f samples/s\n",
                trained.c_str(), static_cast<long long>(s.resumed_from),
                s.samples_per_s * s.wall_s, s.wall_s, s.samples_per_s);
  // Figures of earlier parameters than the final ones say which (no evaluator could score the
  // final ones, or the run stopped early): they are not the model's.
  const bool of_final = s.final_eval_clock >= s.clocks;
  char of[96] = "final test";
  if (!of_final)
    std::snprintf(of, sizeof of, "test (of the parameters at clock %lld, not the final ones)",
                  static_cast<long long>(s.final_eval_clock));
  if (s.evaluations == 0)  // no evaluator, or an empty test set: there is no accuracy to print
    std::printf("  no evaluation (no evaluator or no test rows), max staleness %lld, "
                "dropped messages %llu\n",
                static_cast<long long>(s.max_staleness),
                static_cast<unsigned long long>(s.dropped_messages));
  else if (s.final_test_auc >= 0) {
    // A CTR model leads with what CTR teams read: AUC, logloss, GAUC, calibration; accuracy
    // at p ≥ 0.5 last (at a 25 % click rate, "never clicks" scores 0.75).
    char gauc[32] = "";
    if (s.final_test_gauc != -1) std::snprintf(gauc, sizeof gauc, ", gauc %.4f", s.final_test_gauc);
    std::printf("  %s auc %.4f, logloss %.4f%s, calibration %.3f, accuracy %.4f\n", of,
                s.final_test_auc, s.final_test_loss, gauc, s.final_test_calibration,
                s.final_test_accuracy);
    if (s.final_test_slice_rest_rows != -1) {  // --slice-auc: the largest slices, one line
      std::printf("  slice auc (key: auc over rows):");
      for (const auto& slice : s.final_test_slices)
        std::printf(" %llu: %.4f/%lld", static_cast<unsigned long long>(slice.key), slice.auc,
                    static_cast<long long>(slice.rows));
      std::printf("; %lld rows in other slices\n",
                  static_cast<long long>(s.final_test_slice_rest_rows));
    }
    std::printf("  max staleness %lld, dropped messages %llu\n",
                static_cast<long long>(s.max_staleness),
                static_cast<unsigned long long>(s.dropped_messages));
  } else
    std::printf("  %s accuracy %.4f, test loss %.4f, max staleness %lld, dropped messages %llu\n",
                of, s.final_test_accuracy, s.final_test_loss,
                static_cast<long long>(s.max_staleness),
                static_cast<unsigned long long>(s.dropped_messages));
  if (s.gradients_refused + s.updates_refused + s.checkpoints_refused + s.refused_unauthorised
        + s.norms_refused > 0)
    std::printf("  refused: %llu pushes beyond --max-gradient, %llu pushes beyond "
                "--gradient-norm-bound, %llu updates beyond --max-parameter, %llu checkpoints "
                "outside a shard's root, %llu messages not authorised\n",
                static_cast<unsigned long long>(s.gradients_refused),
                static_cast<unsigned long long>(s.norms_refused),
                static_cast<unsigned long long>(s.updates_refused),
                static_cast<unsigned long long>(s.checkpoints_refused),
                static_cast<unsigned long long>(s.refused_unauthorised));
  if (!s.shard_stats_list.empty() && !s.shard_stats_list.front().table_rows.empty()) {
    std::printf("  sparse rows per shard:");
    for (const auto& shard : s.shard_stats_list) {
      std::printf(" ps:%d", shard.shard);
      for (auto rows : shard.table_rows) std::printf(" %llu", static_cast<unsigned long long>(rows));
      std::printf(" (peak");
      for (auto rows : shard.table_rows_peak)
        std::printf(" %llu", static_cast<unsigned long long>(rows));
      if (shard.rows_evicted > 0)
        std::printf(", %llu evicted", static_cast<unsigned long long>(shard.rows_evicted));
      if (shard.pending_keys > 0)
        std::printf(", %llu keys pending in %.1f KiB",
                    static_cast<unsigned long long>(shard.pending_keys),
                    double(shard.admission_bytes) / 1024);
      std::printf(", %.1f MiB);", double(shard.table_bytes) / (1 << 20));
    }
    std::printf("\n");
  }
  if (s.failures > 0 || s.recoveries > 0 || s.checkpoints > 0 || s.resumed_from >= 0
      || s.checkpoint_failures > 0) {
    std::printf("  failures %d, recoveries %d, checkpoints %d", s.failures, s.recoveries,
                s.checkpoints);
    if (s.resumed_from >= 0)
      std::printf(", resumed from clock %lld", static_cast<long long>(s.resumed_from));
    if (s.failovers > 0 || s.rereplications > 0)
      std::printf(", fail-overs to a standby %d, standbys rebuilt %d", s.failovers,
                  s.rereplications);
    std::printf("\n");
  }
  if (s.checkpoint_failures > 0)
    std::printf("  checkpoint failures %d (last: %s)\n", s.checkpoint_failures,
                s.checkpoint_error.c_str());
  const std::string newest =
    s.last_checkpoint < 0 ? "there is no checkpoint"
                          : "the newest checkpoint is at clock " + std::to_string(s.last_checkpoint);
  if (s.workers_lost) {  // a restart trains the rest: retryable (deploy/exit_codes.hpp)
    std::fprintf(stderr, "error: every worker was lost: the run trained %lld of its %lld clocks "
                         "(%s); exit %d: restart it to go on (--resume continues from the "
                         "newest checkpoint)\n",
                 static_cast<long long>(s.clocks), static_cast<long long>(s.planned_clocks),
                 newest.c_str(), exit_code::retryable);
    return exit_code::retryable;
  }
  if (s.checkpoint_failures > 0 && s.checkpoints == 0) {
    std::fprintf(stderr, "error: every checkpoint of this run failed (%d): nothing of it is "
                         "saved\n", s.checkpoint_failures);
    return exit_code::failed;
  }
  if (s.final_checkpoint_failed) {  // a restart would fail alike until the disk is mended
    std::fprintf(stderr, "error: the final checkpoint failed (%s): the final state is not "
                         "saved; %s\n", s.checkpoint_error.c_str(), newest.c_str());
    return exit_code::failed;
  }
  return exit_code::success;
}

} // namespace actorps
