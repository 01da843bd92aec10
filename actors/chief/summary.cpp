// The end of a run: every shard's statistics and final parameters, with the chief's own
// counts and the final evaluation, make the summary that answers (run) and ends the metrics.
#include "actors/chief/state.hpp"
#include "kernels/value_bounds.hpp"

namespace actorps::chief_detail {

namespace {

run_summary make_summary(const chief_state& st, const eval_report& final_eval,
                         std::vector<shard_stats> stats, std::vector<wire_buffer> snapshots) {
  run_summary sum;
  sum.mode = to_string(st.cfg.spec.mode);
  sum.staleness_bound = st.cfg.spec.staleness_bound();
  sum.workers = st.cfg.spec.workers;
  sum.shards = st.cfg.spec.shards;
  sum.final_block_shards = st.cfg.spec.block_shards;
  // What was trained, not what was asked for: they differ when the run stopped early (a
  // signal) or lost every worker. Counted in minibatches of each worker's data: a replaced
  // worker that went on with its predecessor's data runs past the others' last clock, not
  // past its data.
  for (int32_t w = 0; w < static_cast<int32_t>(st.clocks.size()); ++w)
    sum.worker_clocks.push_back(st.batches_trained(w));
  sum.clocks = sum.worker_clocks.empty()
                 ? 0 : *std::max_element(sum.worker_clocks.begin(), sum.worker_clocks.end());
  // After a change of the number of workers each counts its share from the change's clock on:
  // the clocks trained are the furthest clock reached.
  if (!st.plans.empty())
    for (int32_t w = 0; w < static_cast<int32_t>(st.clocks.size()); ++w)
      sum.clocks = std::max(sum.clocks, st.data_offset(w) + st.batches_trained(w));
  sum.planned_clocks = st.cfg.steps;
  // The rows behind the model: every worker's minibatches trained, those before a resume
  // included and a replaced worker's redone ones once (each batch has exactly `batch` rows);
  // after a change of the number of workers, what the workers before it trained too.
  auto planned = st.batches_before_plans;
  for (int32_t w = 0; w < static_cast<int32_t>(st.clocks.size()); ++w)
    planned += st.batches_planned(w);
  sum.planned_samples = planned * st.cfg.batch;
  sum.samples = st.batches_before_plans * st.cfg.batch;
  for (auto batches : sum.worker_clocks) sum.samples += batches * st.cfg.batch;
  sum.wall_s = st.elapsed();
  if (st.start)
    sum.end_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - *st.start).count();
  sum.workers_lost = st.workers_lost;
  sum.final_checkpoint_failed = st.final_checkpoint_failed;
  sum.last_checkpoint = st.last_checkpoint;
  // Throughput is this run's: the rows it computed (redone ones too) over its own time.
  sum.samples_per_s = sum.wall_s > 0 ? double(st.samples) / sum.wall_s : 0;
  sum.evaluations = st.evaluations;
  sum.final_test_accuracy = final_eval.test_accuracy;
  sum.final_test_loss = final_eval.test_loss;
  sum.final_test_auc = final_eval.test_auc;
  sum.final_test_gauc = final_eval.test_gauc;
  sum.final_test_calibration = final_eval.test_calibration;
  sum.final_test_slices = final_eval.test_slices;
  sum.final_test_slice_rest_rows = final_eval.test_slice_rest_rows;
  sum.final_eval_clock = st.evaluations > 0 ? final_eval.clock : -1;
  sum.backend = backends_text(st);
  sum.failures = st.failures;
  sum.recoveries = st.recoveries;
  sum.failovers = st.failovers;
  sum.rereplications = st.rereplications;
  sum.checkpoints = st.checkpoints;
  sum.checkpoint_failures = st.checkpoint_failures;
  sum.checkpoint_error = st.checkpoint_error;
  sum.resumed_from = st.resumed_from;
  sum.stopped_by = st.stopped_by;
  sum.stopped_at = st.stopped_at;
  // The chief's own, the workers' and the evaluator's as they reported them; every shard's below.
  sum.refused_unauthorised = st.refused_here + st.refused_by_roles;
  for (const auto& s : stats) {
    sum.max_staleness = std::max(sum.max_staleness, s.max_staleness);
    sum.dropped_messages += s.dropped;
    sum.gradients_refused += s.gradients_refused;
    sum.updates_refused += s.updates_refused;
    sum.checkpoints_refused += s.checkpoints_refused;
    sum.refused_unauthorised += s.refused_unauthorised;
    sum.norms_refused += s.norms_refused;
    sum.max_norm_ratio = std::max(sum.max_norm_ratio, s.max_norm_ratio);
    sum.max_gradient = std::max(sum.max_gradient, s.max_gradient);
  }
  // The largest final |parameter|, dense and the rows the snapshots carry: what --max-parameter's
  // default is judged against (scripts/bench/README.md, "Value bounds").
  for (const auto& snap : snapshots)
    if (auto view = decode_shard_parameters(snap)) {
      for (const auto& b : view->blocks)
        sum.max_parameter = std::max(sum.max_parameter, max_abs(b.values, b.count));
      for (const auto& rows : view->sparse)
        sum.max_parameter = std::max(sum.max_parameter, max_abs(rows.values, rows.value_count));
    }
  sum.shard_stats_list = std::move(stats);
  for (const auto& snap : snapshots) sum.final_parameters.push_back(snap.share());
  return sum;
}

/// Each shard's rows per sparse table: [[rows of table 0, ...] per shard].
std::vector<std::vector<uint64_t>> table_rows(const run_summary& sum) {
  std::vector<std::vector<uint64_t>> rows;
  for (const auto& s : sum.shard_stats_list) rows.push_back(s.table_rows);
  return rows;
}

void write_summary(metrics_file& metrics, const run_summary& sum) {
  auto event = json_object().add("event", "summary").add("evaluations", sum.evaluations);
  if (sum.evaluations == 0) {  // not evaluated: no figure rather than a 0 that reads as one
    event.add("final_test_accuracy", nullptr).add("final_test_loss", nullptr);
  } else {
    event.add("final_test_accuracy", sum.final_test_accuracy)
      .add("final_test_loss", sum.final_test_loss)
      .add("final_eval_clock", sum.final_eval_clock);  // below "clocks": not the final parameters
    if (sum.final_test_auc >= 0)
      event.add("final_test_auc", sum.final_test_auc)
        .add("final_test_logloss", sum.final_test_loss);
    if (sum.final_test_gauc != -1) event.add("final_test_gauc", sum.final_test_gauc);
    if (sum.final_test_calibration != -1)
      event.add("final_test_calibration", sum.final_test_calibration);
    if (sum.final_test_slice_rest_rows != -1)
      event.add("final_test_slice_auc", slice_aucs_json(sum.final_test_slices))
        .add("final_test_slice_rest_rows", sum.final_test_slice_rest_rows);
  }
  if (!sum.shard_stats_list.empty() && !sum.shard_stats_list.front().table_rows.empty()) {
    // Per shard: the rows now and at their most (per table), the rows evicted, the keys
    // waiting for admission, and the bytes the tables hold.
    std::vector<std::vector<uint64_t>> peak;
    std::vector<uint64_t> evicted, pending, bytes, admission;
    for (const auto& s : sum.shard_stats_list) {
      peak.push_back(s.table_rows_peak);
      evicted.push_back(s.rows_evicted);
      pending.push_back(s.pending_keys);
      bytes.push_back(s.table_bytes);
      admission.push_back(s.admission_bytes);
    }
    event.add("sparse_rows", table_rows(sum)).add("sparse_rows_peak", peak)
      .add("rows_evicted", evicted).add("pending_keys", pending).add("table_bytes", bytes)
      .add("admission_bytes", admission);
  }
  if (!sum.stopped_by.empty())
    event.add("stopped_by", sum.stopped_by).add("stopped_at", sum.stopped_at);
  uint64_t replicated = 0;  // to the standbys (--replicas 1): forwarded pushes and images
  for (const auto& s : sum.shard_stats_list) replicated += s.replicated_bytes;
  if (replicated > 0) event.add("replicated_bytes", replicated);
  // Each shard's accepted pushes and applied updates, in shard order: what a run with
  // fail-overs is checked against (every push the workers sent applied once), across
  // processes too, where only this file is there to read.
  std::vector<uint64_t> pushes, updates;
  uint64_t pushed_bytes = 0;  // what --wire-precision changes
  for (const auto& s : sum.shard_stats_list) {
    pushes.push_back(s.pushes);
    updates.push_back(s.updates);
    pushed_bytes += s.pushed_bytes;
  }
  event.add("pushes_per_shard", pushes).add("updates_per_shard", updates)
    .add("pushed_bytes", pushed_bytes);
  metrics.write(event
                  .add("samples_per_s", sum.samples_per_s)
                  .add("max_staleness", sum.max_staleness)
                  .add("staleness_bound", sum.staleness_bound)
                  .add("mode", sum.mode)
                  .add("workers", sum.workers)
                  .add("shards", sum.shards)
                  .add("clocks", sum.clocks)
                  .add("samples", sum.samples)
                  .add("planned_clocks", sum.planned_clocks)
                  .add("planned_samples", sum.planned_samples)
                  .add("worker_clocks", sum.worker_clocks)
                  .add("wall_s", sum.wall_s)
                  .add("end_s", sum.end_s)
                  .add("workers_lost", sum.workers_lost)
                  .add("final_checkpoint_failed", sum.final_checkpoint_failed)
                  .add("last_checkpoint", sum.last_checkpoint)
                  .add("dropped_messages", sum.dropped_messages)
                  .add("gradients_refused", sum.gradients_refused)
                  .add("updates_refused", sum.updates_refused)
                  .add("checkpoints_refused", sum.checkpoints_refused)
                  .add("refused_unauthorised", sum.refused_unauthorised)
                  .add("norms_refused", sum.norms_refused)
                  .add("max_norm_ratio", sum.max_norm_ratio)
                  .add("max_gradient", sum.max_gradient)
                  .add("max_parameter", sum.max_parameter)
                  .add("failures", sum.failures)
                  .add("recoveries", sum.recoveries)
                  .add("failovers", sum.failovers)
                  .add("rereplications", sum.rereplications)
                  .add("checkpoints", sum.checkpoints)
                  .add("checkpoint_failures", sum.checkpoint_failures)
                  .add("resumed_from", sum.resumed_from)
                  .add("backend", sum.backend));
}

} // namespace

void finish_run(self_ptr self, const eval_report& final_eval) {
  if (exports_busy(self->state))  // the run's versions are on disk before the summary says so
    return after_exports(self, [=] { finish_run(self, final_eval); });
  auto attempt = self->state.finishing_attempt;
  auto superseded = [=] { return self->state.finishing_attempt != attempt; };  // lost shard
  auto failed = [=](caf::error& err) {
    // A shard lost while answering: its down message starts the final steps over, after a
    // fail-over (standbys) or a rollback; before it came, the run has not failed yet either.
    if (superseded() || self->state.phase != run_phase::finishing || primary_gone(err)) return;
    fail_run(self, "collecting the final state failed", err);
  };
  ask_all_shards<shard_stats>(self, [=](std::vector<shard_stats> stats) {
    auto& st = self->state;
    // An export needs every sparse row with its key: asked here, of the shards that hold them,
    // rather than read back later, as the run's roles stop once the summary is delivered.
    const bool rows = st.cfg.final_rows && !st.cfg.spec.model.sparse_tables.empty();
    ask_each<wire_buffer>(
      st.shards.size(),
      [&](std::size_t s) {
        if (!rows) return self->request(st.shards[s], st.cfg.request_timeout, snapshot_atom::value);
        return self->request(st.shards[s], st.cfg.request_timeout, snapshot_atom::value,
                             encode_all_rows_pull(static_cast<int32_t>(s)));
      },
      [=](std::vector<wire_buffer> snapshots) {
        auto& st = self->state;
        if (st.phase != run_phase::finishing || superseded()) return;  // failed, or started over
        report_unfired_kills(self);
        report_unfired_resizes(self);
        auto sum = make_summary(st, final_eval, std::move(stats), std::move(snapshots));
        write_summary(*st.metrics, sum);
        st.progress->finish();  // before the caller, woken by the summary, prints it
        st.run_promise.deliver(std::move(sum));
        stop_run(self);
      },
      failed);
  }, failed, stats_atom::value);
}

} // namespace actorps::chief_detail
