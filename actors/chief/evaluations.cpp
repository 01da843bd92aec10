// Evaluations: every `eval_every` global clocks the evaluator scores a snapshot of the shards'
// parameters, one at a time, so training never waits for it; once training is over, a final
// one (after the periodic one still in flight, whose snapshot predates the end), then the
// summary. An evaluation whose evaluator is lost is abandoned; the final one then falls back
// to the last figures an evaluation gave.
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

namespace actorps::chief_detail {

namespace {

void record_eval(self_ptr self, const eval_report& report, bool final_eval) {
  auto& st = self->state;
  st.last_accuracy = report.test_accuracy;
  st.last_test_loss = report.test_loss;
  st.last_auc = report.test_auc;
  if (report.test_rows > 0) ++st.evaluations;  // an empty test set scores nothing
  auto event = json_object()
                 .add("event", "eval")
                 .add("clock", report.clock)
                 .add("epoch", double(report.clock) / double(st.steps_per_epoch()))
                 .add("test_accuracy", report.test_accuracy)
                 .add("test_loss", report.test_loss);
  if (report.test_auc >= 0)  // a binary model: its loss is the logloss
    event.add("test_auc", report.test_auc).add("test_logloss", report.test_loss);
  st.metrics->write(event.add("test_rows", report.test_rows)
                      .add("eval_s", report.eval_seconds)
                      .add("final", final_eval)
                      .add("wall_s", st.elapsed()));
  st.metrics->flush();
  st.progress->show(progress_text(st), true);
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

void start_eval(self_ptr self, int64_t clock, bool final_eval) {
  auto& st = self->state;
  if (!st.evaluator) {
    if (final_eval) finish_run(self, last_known_eval(st));
    return;
  }
  st.eval_in_flight = final_eval ? evaluation::final_one : evaluation::periodic;
  auto generation = ++st.eval_generation;
  self->request(st.evaluator, st.cfg.request_timeout, eval_atom::value, clock)
    .then(
      [=](eval_report& report) {
        if (generation != self->state.eval_generation) return;  // abandoned meanwhile
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
  r.clock = st.cfg.steps;
  r.test_accuracy = st.last_accuracy >= 0 ? st.last_accuracy : 0;
  r.test_loss = st.last_test_loss >= 0 ? st.last_test_loss : 0;
  r.test_auc = st.last_auc;
  return r;
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
  start_eval(self, st.cfg.steps, true);
}

void abandon_eval(self_ptr self) {
  auto& st = self->state;
  auto abandoned = st.eval_in_flight;
  if (abandoned == evaluation::none) return;
  ++st.eval_generation;
  if (abandoned == evaluation::periodic) return periodic_eval_over(self);
  st.eval_in_flight = evaluation::none;
  if (st.phase == run_phase::rolling_back) return;
  finish_run(self, last_known_eval(st));
}

} // namespace actorps::chief_detail
