// A request to stop early: the chief's process got SIGTERM or SIGINT (preemption, `kubectl
// delete`, Ctrl-C). The run ends cleanly instead of vanishing:
//
//   training, checkpoints on   a checkpoint a few clocks ahead (off the every-N schedule, unless
//                              the next scheduled one is as near): the shards keep the state
//                              when they reach it; once it is written (or has failed) the run
//                              stops. An orchestrator's grace period (Kubernetes: 30 s) then
//                              covers a few clocks and one write, not up to N clocks.
//   training, no --checkpoint-dir   the run stops at once
//   a second request           the run stops at once, without waiting for the checkpoint
//   placing, rolling_back      nothing consistent to save: the run fails as interrupted
//   finishing                  the run is at its end already and ends as it would have
//   training, following a stream   the first request ends the stream (follow.cpp): the run
//                              finishes as at its last clock, exit 0; a second stops it at once
//
// Stopping early: the workers stop, the summary (with the last evaluation, and the clock it
// stopped at) answers (run), and every task is stopped with errc::run_interrupted, so that each
// exits with the code that tells an orchestrator to restart it (deploy/exit_codes.hpp).
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

namespace actorps::chief_detail {

namespace {

void stop_early(self_ptr self, const std::string& signal) {
  auto& st = self->state;
  if (st.phase != run_phase::training) return;  // it ended or failed meanwhile
  auto clock = st.global_clock();
  st.stopped_by = signal;
  st.stopped_at = clock;
  st.stop_reason = make_error(errc::run_interrupted, "stopped by " + signal + " at clock "
                                                       + std::to_string(clock));
  log_line("chief", signal + ": stopping the run at clock " + std::to_string(clock) + " of "
                      + std::to_string(st.cfg.steps));
  enter(self, run_phase::finishing);
  st.end = std::chrono::steady_clock::now();
  for (std::size_t w = 0; w < st.workers.size(); ++w) {
    st.done[w] = true;  // their down messages are no failures
    if (st.workers[w]) self->send_exit(st.workers[w], caf::exit_reason::user_shutdown);
  }
  finish_run(self, last_known_eval(st));
}

/// Stops the run once the checkpoint at `clock` has been written (or has failed).
void stop_after_checkpoint(self_ptr self, int64_t clock, const std::string& signal) {
  self->state.after_checkpoint = [=] {
    auto& st = self->state;
    if (st.phase != run_phase::training) return;
    if (st.next_checkpoint > clock && !st.checkpoint_in_flight) return stop_early(self, signal);
    stop_after_checkpoint(self, clock, signal);  // an earlier one ended: wait on
  };
}

/// How far ahead of the chief's global clock the shards may be when a request reaches them:
/// the workers' reports lag their pushes by a message each, which is a few clocks when clocks
/// are short. About 0.1 s of clocks at the rate of this run so far, at least 2.
int64_t clocks_ahead(const chief_state& st) {
  auto done = st.global_clock() - st.start_clock;
  auto rate = st.elapsed() > 0 ? static_cast<double>(done) / st.elapsed() : 0.0;
  return std::max<int64_t>(2, static_cast<int64_t>(rate * 0.1) + 1);
}

/// Asks for a checkpoint `ahead` clocks past the global clock now (the next scheduled one when
/// that is as near), and stops the run once it is written. The shards keep a clock off the
/// schedule only when asked before they reach it: if one had passed it, the request is refused
/// with checkpoint_clock_passed (not a failure) and made again twice as far ahead.
void checkpoint_then_stop(self_ptr self, const std::string& signal, int64_t ahead, int tries) {
  auto& st = self->state;
  if (st.phase != run_phase::training) return;
  if (st.checkpoint_in_flight) {  // one at a time: ask once it has ended
    st.after_checkpoint = [=] { checkpoint_then_stop(self, signal, ahead, tries); };
    return;
  }
  auto target = st.global_clock() + ahead;
  if (target >= st.next_checkpoint || tries > 5) {
    auto clock = std::min(st.next_checkpoint, st.cfg.steps);
    log_line("chief", signal + ": training goes on to the checkpoint at clock "
                        + std::to_string(clock) + ", then the run stops");
    if (clock >= st.cfg.steps) return;  // the run's end, with its final checkpoint
    return stop_after_checkpoint(self, clock, signal);
  }
  log_line("chief", signal + ": checkpoint at clock " + std::to_string(target)
                      + ", then the run stops");
  auto failures = st.checkpoint_failures;
  take_checkpoint(self, target, [] {});
  st.after_checkpoint = [=] {
    auto& st = self->state;
    if (st.phase != run_phase::training) return;
    if (st.last_checkpoint >= target || st.checkpoint_failures > failures)
      return stop_early(self, signal);  // written, or failed and counted: stop either way
    log_line("chief", signal + ": the shards had passed clock " + std::to_string(target)
                        + " when asked; asking for one further ahead");
    checkpoint_then_stop(self, signal, ahead * 2, tries + 1);
  };
}

} // namespace

void on_interrupt(self_ptr self, const std::string& signal) {
  auto& st = self->state;
  ++st.interrupts;
  switch (st.phase) {
    case run_phase::stopping:
      return;
    case run_phase::finishing:
      log_line("chief", signal + ": the run is finishing already; it ends as it would have");
      return;
    case run_phase::training:
      // Following a stream, the first stop ends it: the run finishes as at its last clock.
      if (st.interrupts == 1 && end_stream(self, signal)) return;
      break;
    case run_phase::waiting:
    case run_phase::placing:
    case run_phase::rolling_back:
    case run_phase::resizing: {
      auto when = st.phase == run_phase::rolling_back ? "while going back to a checkpoint"
                  : st.phase == run_phase::resizing   ? "while resizing the shards"
                                                      : "before training began";
      st.stopped_by = signal;
      st.stop_reason = make_error(errc::run_interrupted, "stopped by " + signal + " " + when);
      return fail_run(self, "stopped by " + signal, make_error(errc::run_interrupted, when));
    }
  }
  auto global = std::to_string(st.global_clock());
  if (!st.io || st.interrupts > 1) {  // no --checkpoint-dir, or asked twice
    if (st.io) log_line("chief", signal + " again: not waiting for the checkpoint");
    return stop_early(self, signal);
  }
  log_line("chief", signal + " at clock " + global + ": a checkpoint, then the run stops (a "
                      "second signal stops it at once)");
  checkpoint_then_stop(self, signal, clocks_ahead(st), 0);
}

} // namespace actorps::chief_detail
