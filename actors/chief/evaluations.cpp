// Evaluations: every `eval_every` global clocks the evaluator scores a snapshot of the shards'
// parameters, one at a time, so training never waits for it; once training is over, a final
// one (after the periodic one still in flight, whose snapshot predates the end), then the
// summary. An evaluation whose evaluator is lost is abandoned; the final one then gets a fresh
// evaluator in one process (the final parameters are scored whatever was lost), else falls back
// to the last figures an evaluation gave, labelled with their clock.
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

namespace actorps::chief_detail {

namespace {

/// With sparse tables: asks every shard for its figures and writes them as a "tables" event
/// (rows per shard and table, pending admission keys and their bytes, table bytes), which the
/// progress line shows too. Training goes on meanwhile; a shard that does not answer (lost)
/// leaves this one out.
void record_tables(self_ptr self, int64_t clock) {
  if (self->state.cfg.spec.model.sparse_tables.empty()) return;
  ask_all_shards<shard_stats>(
    self,
    [=](std::vector<shard_stats> stats) {
      auto& st = self->state;
      std::vector<std::vector<uint64_t>> rows;
      std::vector<uint64_t> pending, admission, bytes;
      int64_t total = 0;
      for (const auto& s : stats) {
        rows.push_back(s.table_rows);
        for (auto r : s.table_rows) total += static_cast<int64_t>(r);
        pending.push_back(s.pending_keys);
        admission.push_back(s.admission_bytes);
        bytes.push_back(s.table_bytes);
      }
      st.last_sparse_rows = total;
      st.metrics->write(json_object()
                          .add("event", "tables")
                          .add("eval_clock", clock)  // not "clock": no TensorBoard step
                          .add("sparse_rows", rows)
                          .add("pending_keys", pending)
                          .add("admission_bytes", admission)
                          .add("table_bytes", bytes)
                          .add("wall_s", st.elapsed()));
      grow_for_rows(self, stats);  // --max-rows-per-shard with a spare ps task waiting
    },
    [](caf::error&) {}, stats_atom::value);
}

void record_eval(self_ptr self, const eval_report& report, bool final_eval) {
  auto& st = self->state;
  st.last_accuracy = report.test_accuracy;
  st.last_test_loss = report.test_loss;
  st.last_auc = report.test_auc;
  st.last_gauc = report.test_gauc;
  st.last_calibration = report.test_calibration;
  st.last_slices = report.test_slices;
  st.last_slice_rest_rows = report.test_slice_rest_rows;
  if (report.test_rows > 0) {  // an empty test set scores nothing
    ++st.evaluations;
    st.last_eval_clock = report.clock;
  }
  auto event = json_object()
                 .add("event", "eval")
                 .add("clock", report.clock)
                 .add("epoch", st.epoch_at(report.clock))
                 .add("test_accuracy", report.test_accuracy)
                 .add("test_loss", report.test_loss);
  if (report.test_auc >= 0)  // a binary model: its loss is the logloss
    event.add("test_auc", report.test_auc).add("test_logloss", report.test_loss);
  if (report.test_gauc != -1) event.add("test_gauc", report.test_gauc);
  if (report.test_calibration != -1) event.add("test_calibration", report.test_calibration);
  if (report.test_slice_rest_rows != -1)
    event.add("test_slice_auc", slice_aucs_json(report.test_slices))
      .add("test_slice_rest_rows", report.test_slice_rest_rows);
  st.metrics->write(event.add("test_rows", report.test_rows)
                      .add("eval_s", report.eval_seconds)
                      .add("final", final_eval)
                      .add("wall_s", st.elapsed()));
  st.metrics->flush();
  st.progress->show(progress_text(st), true);
  if (!final_eval) record_tables(self, report.clock);
}

/// A periodic evaluation has ended (reported or abandoned): what waited for it goes on.
void periodic_eval_over(self_ptr self) {
  auto& st = self->state;
  st.eval_in_flight = evaluation::none;
  if (auto next = std::move(st.after_eval)) {
    st.after_eval = nullptr;
    next();
  }
}

void start_eval(self_ptr self, int64_t clock, bool final_eval);

/// The final evaluation has no evaluator: it was lost (its replacements used up, or during the
/// final evaluation itself), or there never was one. In one process a fresh one scores the final
/// parameters (once: a second loss ends it); otherwise the final figures are the last
/// evaluation's, labelled with its clock (summary.cpp).
void final_without_evaluator(self_ptr self) {
  auto& st = self->state;
  if (!st.cfg.remote && st.cfg.test && !st.final_evaluator_spawned) {
    st.final_evaluator_spawned = true;
    if (st.evaluator) {  // it failed the request without being lost: its successor replaces it
      self->send_exit(st.evaluator, caf::exit_reason::user_shutdown);
      st.evaluator = nullptr;
    }
    log_line("chief", "no evaluator for the final evaluation; starting one to score the final "
                      "parameters");
    start_evaluator(self, [=](bool) {
      if (self->state.evaluator)
        return start_eval(self, self->state.trained_clocks(), true);
      finish_run(self, last_known_eval(self->state));
    });
    return;
  }
  if (st.evaluations > 0)
    log_line(log_level::warn, "chief",
             "the final parameters were not evaluated (no evaluator); the final figures are "
             "those of the evaluation at clock " + std::to_string(st.last_eval_clock));
  finish_run(self, last_known_eval(st));
}

void start_eval(self_ptr self, int64_t clock, bool final_eval) {
  auto& st = self->state;
  if (!st.evaluator) {
    if (final_eval) return final_without_evaluator(self);
    record_tables(self, clock);  // the table figures keep their schedule without one
    return;
  }
  st.eval_in_flight = final_eval ? evaluation::final_one : evaluation::periodic;
  auto generation = ++st.eval_generation;
  self->request(st.evaluator, st.cfg.request_timeout, eval_atom::value, clock)
    .then(
      [=](eval_report& report) {
        if (generation != self->state.eval_generation) return;  // abandoned meanwhile
        self->state.note_reported_refusals(evaluator_role(), report.refused);
        record_eval(self, report, final_eval);
        if (!final_eval) return periodic_eval_over(self);
        self->state.eval_in_flight = evaluation::none;
        finish_run(self, report);
      },
      [=](caf::error& err) {
        if (generation != self->state.eval_generation) return;
        log_line("chief", "evaluation at clock " + std::to_string(clock)
                            + " failed: " + describe(err));
        abandon_eval(self);
      });
}

} // namespace

eval_report last_known_eval(const chief_state& st) {
  eval_report r;
  r.clock = st.last_eval_clock;
  r.test_accuracy = st.last_accuracy >= 0 ? st.last_accuracy : 0;
  r.test_loss = st.last_test_loss >= 0 ? st.last_test_loss : 0;
  r.test_auc = st.last_auc;
  r.test_gauc = st.last_gauc;
  r.test_calibration = st.last_calibration;
  r.test_slices = st.last_slices;
  r.test_slice_rest_rows = st.last_slice_rest_rows;
  return r;
}

nlohmann::ordered_json slice_aucs_json(const std::vector<slice_report>& slices) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& s : slices)
    out.push_back(json_object().add("key", std::to_string(s.key)).add("rows", s.rows)
                    .add("positives", s.positives).add("auc", s.auc).json());
  return out;
}

void maybe_evaluate(self_ptr self) {
  auto& st = self->state;
  auto every = st.cfg.eval_every;
  auto global = st.global_clock();
  if (every <= 0 || st.eval_in_flight != evaluation::none || global < st.next_eval
      || global >= st.cfg.steps)  // the final evaluation covers the last clock
    return;
  st.next_eval = (global / every + 1) * every;
  start_eval(self, global, false);
}

void evaluate_final(self_ptr self) {
  auto& st = self->state;
  if (st.eval_in_flight != evaluation::none) {
    st.after_eval = [=] { evaluate_final(self); };
    return;
  }
  start_eval(self, st.trained_clocks(), true);  // short of cfg.steps when every worker was lost
}

void abandon_eval(self_ptr self) {
  auto& st = self->state;
  auto abandoned = st.eval_in_flight;
  if (abandoned == evaluation::none) return;
  ++st.eval_generation;
  if (abandoned == evaluation::periodic) return periodic_eval_over(self);
  st.eval_in_flight = evaluation::none;
  if (st.phase == run_phase::rolling_back) return;
  final_without_evaluator(self);
}

} // namespace actorps::chief_detail
