// A request to stop early: the chief's process got SIGTERM or SIGINT (preemption, `kubectl
// delete`, Ctrl-C). The run ends cleanly instead of vanishing:
//
//   training, checkpoints on   training goes on to the next checkpoint clock the shards keep;
//                              once that checkpoint is written (or has failed), the run stops
//   training, no checkpoints   the run stops at once
//   a second request           the run stops at once, without waiting for the checkpoint
//   placing, rolling_back      nothing consistent to save: the run fails as interrupted
//   finishing                  the run is at its end already and ends as it would have
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
      break;
    case run_phase::waiting:
    case run_phase::placing:
    case run_phase::rolling_back: {
      auto when = st.phase == run_phase::rolling_back ? "while going back to a checkpoint"
                                                      : "before training began";
      st.stopped_by = signal;
      st.stop_reason = make_error(errc::run_interrupted, "stopped by " + signal + " " + when);
      return fail_run(self, "stopped by " + signal, make_error(errc::run_interrupted, when));
    }
  }
  auto global = std::to_string(st.global_clock());
  bool checkpoints = st.io && st.cfg.checkpoints.every > 0;
  if (!checkpoints || st.interrupts > 1) {
    if (checkpoints)
      log_line("chief", signal + " again: not waiting for the checkpoint");
    else if (st.io)
      log_line("chief", signal + ": no checkpoint clock before the run's end (--checkpoint-every "
                          "0): stopping without one");
    return stop_early(self, signal);
  }
  auto target = st.next_checkpoint;  // the next clock whose state the shards keep
  if (target >= st.cfg.steps) {
    log_line("chief", signal + " at clock " + global + ": the run's end (clock "
                        + std::to_string(st.cfg.steps) + ", with its final checkpoint) is as "
                        "near as the next checkpoint; training goes on to it (a second signal "
                        "stops at once)");
    return;
  }
  log_line("chief", signal + " at clock " + global + ": training goes on to the checkpoint at "
                      "clock " + std::to_string(target) + ", then the run stops (a second "
                      "signal stops it at once)");
  stop_after_checkpoint(self, target, signal);
}

} // namespace actorps::chief_detail
