#include "actors/chief.hpp"

#include "actors/evaluator.hpp"
#include "actors/log.hpp"
#include "actors/metrics.hpp"
#include "actors/ps_shard.hpp"
#include "actors/worker.hpp"
#include "kernels/parameter_init.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>

namespace actorps {

namespace {

struct chief_state {
  static inline const char* name = "chief";

  chief_config cfg;
  std::shared_ptr<metrics_file> metrics;
  std::unique_ptr<progress_line> progress;
  caf::typed_response_promise<run_summary> run_promise;
  bool running = false, stopping = false;

  std::vector<ps_shard_actor> shards;
  std::vector<worker_actor> workers;
  evaluator_actor evaluator;

  std::vector<int64_t> clocks;     // finished clocks per worker, from its reports
  std::vector<bool> live, done;
  std::vector<double> last_loss;
  int64_t samples = 0;
  int64_t max_staleness = 0;
  int failures = 0;

  bool eval_in_flight = false, training_over = false, final_eval_started = false;
  int64_t next_eval = 0;
  double last_accuracy = -1, last_test_loss = -1;

  std::chrono::steady_clock::time_point start, end;

  double elapsed() const {
    auto until = training_over ? end : std::chrono::steady_clock::now();
    return std::chrono::duration<double>(until - start).count();
  }
  int64_t global_clock() const {
    int64_t min = std::numeric_limits<int64_t>::max();
    for (std::size_t w = 0; w < clocks.size(); ++w)
      if (live[w]) min = std::min(min, clocks[w]);
    return min == std::numeric_limits<int64_t>::max() ? cfg.steps : min;
  }
  int64_t steps_per_epoch() const {
    auto rows = cfg.train ? cfg.train->rows : 1;
    return std::max<int64_t>(1, rows / (int64_t(cfg.spec.workers) * cfg.batch));
  }
};

using self_ptr = chief_actor::stateful_pointer<chief_state>;

/// Sends the same request to every shard and calls `done` with the replies in shard order, or
/// `failed` with the first error.
template <class Reply, class Done, class Failed, class... Ts>
void ask_all_shards(self_ptr self, Done done, Failed failed, Ts... xs) {
  auto& shards = self->state.shards;
  auto replies = std::make_shared<std::vector<Reply>>(shards.size());
  auto left = std::make_shared<std::size_t>(shards.size());
  auto errored = std::make_shared<bool>(false);
  for (std::size_t i = 0; i < shards.size(); ++i)
    self->request(shards[i], self->state.cfg.request_timeout, xs...)
      .then(
        [=](Reply& reply) {
          (*replies)[i] = std::move(reply);
          if (--*left == 0) done(std::move(*replies));
        },
        [=](caf::error& err) {
          if (*errored) return;
          *errored = true;
          failed(err);
        });
}

void shutdown(self_ptr self) {
  auto& st = self->state;
  st.stopping = true;
  st.progress->finish();
  st.metrics->flush();
  for (auto& w : st.workers) self->send_exit(w, caf::exit_reason::user_shutdown);
  if (st.evaluator) self->send_exit(st.evaluator, caf::exit_reason::user_shutdown);
  for (auto& s : st.shards) self->send_exit(s, caf::exit_reason::user_shutdown);
  self->quit();
}

void fail_run(self_ptr self, const std::string& what, const caf::error& err) {
  auto& st = self->state;
  if (st.stopping) return;
  log_line("chief", what + ": " + describe(err));
  st.run_promise.deliver(err);
  shutdown(self);
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
                "max staleness %lld",
                double(clock) / double(st.steps_per_epoch()), static_cast<long long>(clock),
                static_cast<long long>(st.cfg.steps), elapsed > 0 ? st.samples / elapsed : 0.0,
                n ? loss / n : 0.0, acc, static_cast<long long>(st.max_staleness));
  return buf;
}

void finish_run(self_ptr self, const eval_report& final_eval);

void start_eval(self_ptr self, int64_t clock, bool final_eval) {
  auto& st = self->state;
  if (!st.evaluator) {
    if (final_eval) finish_run(self, eval_report{});
    return;
  }
  st.eval_in_flight = true;
  if (final_eval) st.final_eval_started = true;
  self->request(st.evaluator, st.cfg.request_timeout, eval_atom::value, clock)
    .then(
      [=](eval_report& report) {
        auto& st = self->state;
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
        else if (st.training_over)
          start_eval(self, st.cfg.steps, true);  // the last snapshot predates the end
      },
      [=](caf::error& err) { fail_run(self, "evaluation failed", err); });
}

void on_training_over(self_ptr self) {
  auto& st = self->state;
  if (st.training_over) return;
  st.training_over = true;
  st.end = std::chrono::steady_clock::now();
  if (!st.eval_in_flight) start_eval(self, st.cfg.steps, true);
}

void check_all_done(self_ptr self) {
  auto& st = self->state;
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
      sum.backend = "cpu";
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
                          .add("failures", st.failures)
                          .add("backend", sum.backend));
      st.run_promise.deliver(std::move(sum));
      shutdown(self);
    }, failed, snapshot_atom::value);
  }, failed, stats_atom::value);
}

void on_train_report(self_ptr self, const train_report& r) {
  auto& st = self->state;
  if (r.worker < 0 || r.worker >= static_cast<int32_t>(st.clocks.size())) return;
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
                      .add("wall_s", st.elapsed()));
  auto global = st.global_clock();
  if (st.cfg.eval_every > 0 && !st.eval_in_flight && !st.training_over && global >= st.next_eval
      && global < st.cfg.steps) {  // the final evaluation covers the last clock
    st.next_eval = (global / st.cfg.eval_every + 1) * st.cfg.eval_every;
    start_eval(self, global, false);
  }
  st.progress->show(progress_text(st), false);
}

void start_roles(self_ptr self) {
  auto& st = self->state;
  auto& sys = self->system();
  if (st.cfg.test) {
    st.evaluator = spawn_evaluator(sys, {st.cfg.spec, st.cfg.test, st.shards, st.cfg.request_timeout});
    self->monitor(st.evaluator);
  }
  for (int32_t w = 0; w < st.cfg.spec.workers; ++w) {
    worker_config wc;
    wc.index = w;
    wc.spec = st.cfg.spec;
    wc.batch = st.cfg.batch;
    wc.steps = st.cfg.steps;
    wc.slow_ms = w < static_cast<int32_t>(st.cfg.slow_ms.size()) ? st.cfg.slow_ms[w] : 0;
    wc.request_timeout = st.cfg.request_timeout;
    wc.train = st.cfg.train;
    wc.shards = st.shards;
    wc.chief = self;
    st.workers.push_back(spawn_worker(sys, std::move(wc)));
    self->monitor(st.workers.back());
  }
  st.next_eval = st.cfg.eval_every;
  st.start = std::chrono::steady_clock::now();
  for (auto& w : st.workers) self->send(w, start_atom::value);
}

void on_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  if (st.stopping) return;
  auto reason = caf::to_string(dm.reason);
  for (int32_t w = 0; w < static_cast<int32_t>(st.workers.size()); ++w) {
    if (st.workers[w].address() != dm.source) continue;
    if (st.done[w] || !st.live[w]) return;  // a finished worker leaving normally
    st.live[w] = false;
    ++st.failures;
    log_line("chief", "worker " + std::to_string(w) + " lost (" + reason
                        + "); the shards stop waiting for it");
    st.metrics->write(json_object().add("event", "failure").add("role", "worker").add("index", w)
                        .add("reason", reason).add("wall_s", st.elapsed()));
    for (auto& s : st.shards) self->send(s, leave_atom::value, w);
    check_all_done(self);
    return;
  }
  if (st.evaluator && st.evaluator.address() == dm.source) {
    ++st.failures;
    log_line("chief", "evaluator lost (" + reason + "); continuing without evaluations");
    st.metrics->write(json_object().add("event", "failure").add("role", "evaluator")
                        .add("index", 0).add("reason", reason).add("wall_s", st.elapsed()));
    st.evaluator = nullptr;
    if (st.eval_in_flight) {  // its request fails on its own; make sure the run still ends
      st.eval_in_flight = false;
      if (st.training_over) finish_run(self, eval_report{});
    }
    return;
  }
  for (int32_t s = 0; s < static_cast<int32_t>(st.shards.size()); ++s)
    if (st.shards[s].address() == dm.source)
      return fail_run(self, "parameter shard " + std::to_string(s) + " lost",
                      dm.reason ? dm.reason : caf::make_error(caf::sec::runtime_error));
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
      block_layout layout(spec);
      auto initial = initial_parameters(spec.layers, spec.seed);
      std::vector<float> part;
      for (int32_t s = 0; s < spec.shards; ++s) {
        st.shards.push_back(spawn_ps_shard(self->system(), s));
        self->monitor(st.shards.back());
      }
      auto failed = [=](caf::error& err) { fail_run(self, "initialising the shards failed", err); };
      auto left = std::make_shared<std::size_t>(st.shards.size());
      for (int32_t s = 0; s < spec.shards; ++s) {
        part.resize(layout.shard_floats(s));
        layout.gather(s, initial.data(), part.data());
        self->request(st.shards[s], st.cfg.request_timeout, init_atom::value,
                      encode_shard_init(spec, s, layout, part.data()))
          .then([=](caf::ok_atom) { if (--*left == 0) start_roles(self); }, failed);
      }
      return st.run_promise;
    },
    [=](train_atom, const train_report& report) { on_train_report(self, report); },
    [=](done_atom, int32_t worker) {
      auto& st = self->state;
      if (worker < 0 || worker >= static_cast<int32_t>(st.done.size())) return;
      st.done[worker] = true;
      check_all_done(self);
    },
  };
}

} // namespace

chief_actor spawn_chief(caf::actor_system& sys, chief_config cfg) {
  return sys.spawn(chief, std::move(cfg));
}

} // namespace actorps
