#include "actors/chief/state.hpp"

#include "actors/storage/checkpoint_io.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "actors/protocol/log.hpp"

#include <cstdio>

namespace actorps::chief_detail {

void shutdown(self_ptr self) {
  auto& st = self->state;
  st.stopping = true;
  st.progress->finish();
  st.metrics->flush();
  auto stop = [&](const auto& handle) {
    if (handle) self->send_exit(handle, caf::exit_reason::user_shutdown);
  };
  for (auto& w : st.workers) stop(w);
  stop(st.evaluator);
  for (auto& n : st.worker_nodes) stop(n);
  stop(st.evaluator_node);
  for (auto& s : st.shards) stop(s);
  stop(st.io);
  if (st.cfg.remote) {
    // Stay until every task process has stopped (its down message): quitting at once could end
    // this process before the stop orders reach the sockets, and the tasks would then see a
    // lost chief instead of an orderly end. Bounded, in case a task is already gone.
    auto remember = [&](const auto& handle) {
      if (handle) st.stopping_tasks.insert(handle.address());
    };
    for (auto& n : st.worker_nodes) remember(n);
    remember(st.evaluator_node);
    for (auto& s : st.shards) remember(s);
    if (!st.stopping_tasks.empty()) {
      self->delayed_send(self, std::chrono::seconds(10), stop_due_atom::value);
      return;
    }
  }
  self->quit();
}

void fail_run(self_ptr self, const std::string& what, const caf::error& err) {
  auto& st = self->state;
  if (st.stopping) return;
  auto sentence = what + ": " + describe(err);
  log_line("chief", sentence);
  st.run_promise.deliver(caf::make_error(caf::sec::runtime_error, std::move(sentence)));
  shutdown(self);
}

/// "cpu", "cuda", or "cpu+cuda" when workers on different hosts chose differently.
std::string backends_text(const chief_state& st) {
  std::string out;
  for (const auto& b : st.backends) out += (out.empty() ? "" : "+") + b;
  return out.empty() ? to_string(st.cfg.backend) : out;
}

std::string progress_text(const chief_state& st) {
  char buf[256];
  auto clock = st.global_clock();
  auto elapsed = st.elapsed();
  double loss = 0;
  int n = 0;
  for (std::size_t w = 0; w < st.last_loss.size(); ++w)
    if (st.live[w]) loss += st.last_loss[w], ++n;
  char acc[16] = "  -   ";
  if (st.last_accuracy >= 0) std::snprintf(acc, sizeof acc, "%.4f", st.last_accuracy);
  std::snprintf(buf, sizeof buf,
                "epoch %5.2f  clock %6lld/%lld  %8.0f samples/s  loss %.4f  test acc %s  "
                "max staleness %lld  %s",
                double(clock) / double(st.steps_per_epoch()), static_cast<long long>(clock),
                static_cast<long long>(st.cfg.steps), elapsed > 0 ? st.samples / elapsed : 0.0,
                n ? loss / n : 0.0, acc, static_cast<long long>(st.max_staleness),
                backends_text(st).c_str());
  return buf;
}

/// The best final figures when no final evaluation can run: the last one that did.
eval_report last_known_eval(const chief_state& st) {
  eval_report r;
  r.clock = st.cfg.steps;
  r.test_accuracy = st.last_accuracy >= 0 ? st.last_accuracy : 0;
  r.test_loss = st.last_test_loss >= 0 ? st.last_test_loss : 0;
  return r;
}

/// An evaluation that will not come back (its evaluator is gone or the request failed):
/// training never waits for it, and the run still ends.
void abandon_eval(self_ptr self) {
  auto& st = self->state;
  if (!st.eval_in_flight) return;
  st.eval_in_flight = false;
  ++st.eval_generation;
  if (st.final_ready) finish_run(self, last_known_eval(st));
}

void start_eval(self_ptr self, int64_t clock, bool final_eval) {
  auto& st = self->state;
  if (!st.evaluator) {
    if (final_eval) finish_run(self, last_known_eval(st));
    return;
  }
  st.eval_in_flight = true;
  auto generation = ++st.eval_generation;
  self->request(st.evaluator, st.cfg.request_timeout, eval_atom::value, clock)
    .then(
      [=](eval_report& report) {
        auto& st = self->state;
        if (generation != st.eval_generation) return;  // abandoned meanwhile
        st.eval_in_flight = false;
        st.last_accuracy = report.test_accuracy;
        st.last_test_loss = report.test_loss;
        st.metrics->write(json_object()
                            .add("event", "eval")
                            .add("clock", report.clock)
                            .add("epoch", double(report.clock) / double(st.steps_per_epoch()))
                            .add("test_accuracy", report.test_accuracy)
                            .add("test_loss", report.test_loss)
                            .add("test_rows", report.test_rows)
                            .add("eval_s", report.eval_seconds)
                            .add("final", final_eval)
                            .add("wall_s", st.elapsed()));
        st.metrics->flush();
        st.progress->show(progress_text(st), true);
        if (final_eval)
          finish_run(self, report);
        else if (st.final_ready)
          start_eval(self, st.cfg.steps, true);  // the last snapshot predates the end
      },
      [=](caf::error& err) {
        if (generation != self->state.eval_generation) return;
        log_line("chief", "evaluation at clock " + std::to_string(clock) + " failed: " + describe(err));
        abandon_eval(self);
      });
}

void on_training_over(self_ptr self) {
  auto& st = self->state;
  if (st.training_over) return;
  st.training_over = true;
  st.end = std::chrono::steady_clock::now();
  final_checkpoint(self, [=] {
    auto& st = self->state;
    st.final_ready = true;
    if (!st.eval_in_flight) start_eval(self, st.cfg.steps, true);
  });
}

void check_all_done(self_ptr self) {
  auto& st = self->state;
  if (st.rolling_back || !st.replacing.empty() || !st.parked.empty()) return;
  for (std::size_t w = 0; w < st.live.size(); ++w)
    if (st.live[w] && !st.done[w]) return;
  on_training_over(self);
}

void finish_run(self_ptr self, const eval_report& final_eval) {
  auto failed = [=](caf::error& err) { fail_run(self, "collecting the final state failed", err); };
  ask_all_shards<shard_stats>(self, [=](std::vector<shard_stats> stats) {
    ask_all_shards<wire_buffer>(self, [=](std::vector<wire_buffer> snapshots) {
      auto& st = self->state;
      run_summary sum;
      sum.mode = to_string(st.cfg.spec.mode);
      sum.staleness_bound = st.cfg.spec.staleness_bound();
      sum.workers = st.cfg.spec.workers;
      sum.shards = st.cfg.spec.shards;
      sum.clocks = st.cfg.steps;
      sum.samples = st.samples;
      sum.wall_s = st.elapsed();
      sum.samples_per_s = sum.wall_s > 0 ? double(st.samples) / sum.wall_s : 0;
      sum.final_test_accuracy = final_eval.test_accuracy;
      sum.final_test_loss = final_eval.test_loss;
      sum.backend = backends_text(st);
      sum.failures = st.failures;
      sum.recoveries = st.recoveries;
      sum.checkpoints = st.checkpoints;
      sum.resumed_from = st.resumed_from;
      for (const auto& s : stats) {
        sum.max_staleness = std::max(sum.max_staleness, s.max_staleness);
        sum.dropped_messages += s.dropped;
      }
      sum.shard_stats_list = stats;
      sum.final_parameters = std::move(snapshots);
      st.metrics->write(json_object()
                          .add("event", "summary")
                          .add("final_test_accuracy", sum.final_test_accuracy)
                          .add("final_test_loss", sum.final_test_loss)
                          .add("samples_per_s", sum.samples_per_s)
                          .add("max_staleness", sum.max_staleness)
                          .add("staleness_bound", sum.staleness_bound)
                          .add("mode", sum.mode)
                          .add("workers", sum.workers)
                          .add("shards", sum.shards)
                          .add("clocks", sum.clocks)
                          .add("samples", sum.samples)
                          .add("wall_s", sum.wall_s)
                          .add("dropped_messages", sum.dropped_messages)
                          .add("failures", sum.failures)
                          .add("recoveries", sum.recoveries)
                          .add("checkpoints", sum.checkpoints)
                          .add("resumed_from", sum.resumed_from)
                          .add("backend", sum.backend));
      st.run_promise.deliver(std::move(sum));
      shutdown(self);
    }, failed, snapshot_atom::value);
  }, failed, stats_atom::value);
}

/// Whether the current message comes from the actor now in charge of worker w (reports of a
/// stopped or replaced one may still be in the mailbox).
bool from_current_worker(self_ptr self, int32_t w) {
  auto& st = self->state;
  if (w < 0 || w >= static_cast<int32_t>(st.workers.size()) || !st.workers[w]) return false;
  return caf::actor_cast<caf::actor_addr>(self->current_sender()) == st.workers[w].address();
}

void on_train_report(self_ptr self, const train_report& r) {
  auto& st = self->state;
  if (!from_current_worker(self, r.worker) || st.rolling_back) return;
  st.backends.insert(r.backend);
  st.clocks[r.worker] = std::max(st.clocks[r.worker], r.clock + 1);
  st.last_loss[r.worker] = r.loss;
  st.samples += r.samples;
  st.max_staleness = std::max(st.max_staleness, r.staleness);
  st.metrics->write(json_object()
                      .add("event", "train")
                      .add("worker", r.worker)
                      .add("clock", r.clock)
                      .add("loss", r.loss)
                      .add("samples", r.samples)
                      .add("staleness", r.staleness)
                      .add("backend", r.backend)
                      .add("wall_s", st.elapsed()));
  auto global = st.global_clock();
  if (st.cfg.eval_every > 0 && !st.eval_in_flight && !st.training_over && global >= st.next_eval
      && global < st.cfg.steps) {  // the final evaluation covers the last clock
    st.next_eval = (global / st.cfg.eval_every + 1) * st.cfg.eval_every;
    start_eval(self, global, false);
  }
  check_kills(self);
  maybe_checkpoint(self);
  if (st.progress->due(false)) st.progress->show(progress_text(st), false);
}

void begin_training(self_ptr self) {
  auto& st = self->state;
  st.roles_started = true;
  auto every = st.cfg.eval_every;
  st.next_eval = every > 0 ? (st.start_clock / every + 1) * every : 0;
  st.start = std::chrono::steady_clock::now();
  for (auto& w : st.workers) self->send(w, start_atom::value);
  schedule_timed_kills(self);
}

chief_actor::behavior_type chief(self_ptr self, chief_config cfg) {
  auto& st = self->state;
  st.metrics = cfg.metrics ? cfg.metrics : std::make_shared<metrics_file>("");
  st.progress = std::make_unique<progress_line>(cfg.progress);
  auto workers = static_cast<std::size_t>(cfg.spec.workers);
  st.clocks.assign(workers, 0);
  st.live.assign(workers, true);
  st.done.assign(workers, false);
  st.last_loss.assign(workers, 0.0);
  st.shards.resize(workers > 0 ? static_cast<std::size_t>(cfg.spec.shards) : 0);
  st.workers.resize(workers);
  if (cfg.remote) st.worker_nodes.resize(workers);
  st.incarnation.assign(workers, 0);
  st.replacements.assign(workers, 0);
  st.kill_done.assign(cfg.kills.size(), false);
  if (!cfg.checkpoints.dir.empty()) st.io = spawn_checkpoint_io(self->system());
  if (const auto& resume = cfg.checkpoints.resume) {
    auto run = decode_run_checkpoint(resume->run_bytes);  // verified when it was loaded
    st.start_clock = st.resumed_from = resume->clock;
    st.last_checkpoint = resume->clock;
    st.samples = run ? run->samples : 0;
    st.clocks.assign(workers, resume->clock);
  }
  auto every = cfg.checkpoints.every;
  st.next_checkpoint = every > 0 ? (st.start_clock / every + 1) * every : cfg.steps;
  st.cfg = std::move(cfg);
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  return {
    [=](run_atom) -> caf::result<run_summary> {
      auto& st = self->state;
      if (st.running) return caf::make_error(caf::sec::runtime_error, "already running");
      st.running = true;
      st.run_promise = self->make_response_promise<run_summary>();
      const auto& spec = st.cfg.spec;
      st.metrics->write(json_object()
                          .add("event", "start")
                          .add("mode", to_string(spec.mode))
                          .add("staleness_bound", spec.staleness_bound())
                          .add("workers", spec.workers)
                          .add("shards", spec.shards)
                          .add("model", to_string(spec.layers))
                          .add("optimizer", to_string(spec.optimizer.kind))
                          .add("learning_rate", double(spec.optimizer.learning_rate))
                          .add("lr_schedule", to_string(spec.schedule))
                          .add("batch", st.cfg.batch)
                          .add("clocks", st.cfg.steps)
                          .add("seed", static_cast<int64_t>(spec.seed)));
      place_roles(self);
      return st.run_promise;
    },
    [=](train_atom, const train_report& report) { on_train_report(self, report); },
    [=](done_atom, int32_t worker) {
      auto& st = self->state;
      if (!from_current_worker(self, worker)) return;
      st.done[worker] = true;
      check_all_done(self);
    },
    [=](join_atom, int32_t index, ps_shard_actor shard) -> caf::result<caf::ok_atom> {
      return on_shard_join(self, index, std::move(shard));
    },
    [=](join_atom, const std::string& type, int32_t index,
        task_node_actor node) -> caf::result<caf::ok_atom> {
      return on_node_join(self, type, index, std::move(node));
    },
    [=](join_due_atom) { on_join_due(self); },
    [=](rejoin_due_atom, uint64_t rollback) { on_rejoin_due(self, rollback); },
    [=](stop_due_atom) {
      if (self->state.stopping) self->quit();  // some task never said it stopped
    },
    [=](kill_atom, int32_t i) { run_kill(self, i); },
  };
}

} // namespace actorps::chief_detail

namespace actorps {

chief_actor spawn_chief(caf::actor_system& sys, chief_config cfg) {
  return sys.spawn(chief_detail::chief, std::move(cfg));
}

} // namespace actorps
