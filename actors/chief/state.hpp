// Internal to the chief (chief.cpp: the training lifecycle; placement.cpp: where the roles come
// from — spawned in this process, or joined over the network).
#pragma once

#include "actors/chief/chief.hpp"
#include "actors/chief/fan_out.hpp"
#include "actors/chief/metrics.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <functional>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <limits>

namespace actorps::chief_detail {

struct chief_state {
  static inline const char* name = "chief";

  chief_config cfg;
  std::shared_ptr<metrics_file> metrics;
  std::unique_ptr<progress_line> progress;
  caf::typed_response_promise<run_summary> run_promise;
  bool running = false, stopping = false, roles_started = false;

  std::vector<ps_shard_actor> shards;        // index = shard id (null until spawned or joined)
  std::vector<worker_actor> workers;         // index = worker id
  evaluator_actor evaluator;
  std::vector<task_node_actor> worker_nodes; // distributed runs: the processes hosting them
  task_node_actor evaluator_node;

  std::vector<int64_t> clocks;     // finished clocks per worker, from its reports
  std::vector<bool> live, done;
  std::vector<double> last_loss;
  int64_t samples = 0;
  int64_t max_staleness = 0;
  int failures = 0;
  std::set<std::string> backends;  // what the workers report computing on
  std::set<caf::actor_addr> stopping_tasks;  // distributed: told to stop, not yet down

  // checkpoints
  checkpoint_io_actor io;          // the chief's disk actor (null without --checkpoint-dir)
  bool checkpoint_in_flight = false;
  uint64_t checkpoint_generation = 0;  // a rollback abandons the one in flight
  int64_t next_checkpoint = 0;     // global clock of the next one
  int64_t last_checkpoint = -1;    // clock of the newest complete one
  int checkpoints = 0;
  int64_t resumed_from = -1;
  int64_t start_clock = 0;         // where this run (or the last rollback) began
  std::function<void()> after_checkpoint;  // runs once the one in flight has ended

  // failures
  int recoveries = 0;
  std::vector<bool> kill_done;
  std::vector<int> replacements;   // per worker
  int evaluator_replacements = 0;
  std::vector<uint32_t> incarnation;  // per worker: the spawn in charge now
  uint32_t next_incarnation = 1;
  std::set<int32_t> replacing;     // workers whose replacement is under way
  std::set<int32_t> parked;        // workers that stopped because a shard is gone (they
                                   // restart with the shard's recovery)
  uint64_t recovery_epoch = 0;     // bumped by a rollback: older continuations give up
  bool rolling_back = false;
  struct rollback_state {
    int32_t shard = -1;
    int64_t failed_at = 0;                         // global clock when the shard was lost
    std::chrono::steady_clock::time_point detected;
    bool shard_back = false;                       // the lost shard (re)joined
  } rollback;
  // distributed: lost worker or evaluator processes we wait to see again, and since when
  std::map<role_id, std::chrono::steady_clock::time_point> awaiting_rejoin;

  bool eval_in_flight = false, training_over = false;
  bool final_ready = false;        // training over and the final checkpoint written
  uint64_t eval_generation = 0;   // replies of abandoned evaluations are ignored
  int64_t next_eval = 0;
  double last_accuracy = -1, last_test_loss = -1;

  std::chrono::steady_clock::time_point start, end;

  double elapsed() const {
    if (!roles_started) return 0;
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
    return std::max<int64_t>(1, cfg.train_rows / (int64_t(cfg.spec.workers) * cfg.batch));
  }
};

using self_ptr = chief_actor::stateful_pointer<chief_state>;

// chief.cpp
void fail_run(self_ptr self, const std::string& what, const caf::error& err);
void begin_training(self_ptr self);
void check_all_done(self_ptr self);
void abandon_eval(self_ptr self);
void finish_run(self_ptr self, const eval_report& final_eval);
eval_report last_known_eval(const chief_state& st);
std::string backends_text(const chief_state& st);

/// Sends the same request to every shard and calls `done` with the replies in shard order, or
/// `failed` with the first error.
template <class Reply, class Done, class Failed, class... Ts>
void ask_all_shards(self_ptr self, Done done, Failed failed, Ts... xs) {
  const auto& st = self->state;
  ask_each<Reply>(
    st.shards.size(),
    [&](std::size_t s) { return self->request(st.shards[s], st.cfg.request_timeout, xs...); },
    std::move(done), std::move(failed));
}

/// Milliseconds since `t`.
inline double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// checkpoints.cpp
/// Starts a checkpoint when the global clock has reached the next one (none in flight).
void maybe_checkpoint(self_ptr self);
/// Training is over: writes the final checkpoint (if any) and calls `then` once it is done.
void final_checkpoint(self_ptr self, std::function<void()> then);
/// Restores every shard from `ckpt` (or to the initial values when null), then calls `done`.
void restore_shards(self_ptr self, std::shared_ptr<const loaded_checkpoint> ckpt,
                    std::function<void()> done);

// recovery.cpp
void on_down(self_ptr self, const caf::down_msg& dm);
void record_failure(self_ptr self, role_id role, const std::string& reason,
                    const std::string& consequence);
void record_recovery(self_ptr self, role_id role, std::chrono::steady_clock::time_point detected,
                     int64_t clock, int64_t lost_clocks);
/// Kills whatever --kill planned for now (at_clock reached); schedules the timed ones.
void check_kills(self_ptr self);
void schedule_timed_kills(self_ptr self);
void run_kill(self_ptr self, int32_t i);
/// Distributed: a lost worker's or evaluator's process is back (join); it takes over.
void on_rejoined_node(self_ptr self, role_id role);

// rollback.cpp
/// Shard s is lost: the run goes back to the newest checkpoint (or fails, when it cannot).
void begin_rollback(self_ptr self, int32_t s, const caf::down_msg& dm);
/// Distributed: a lost shard's process is back (join); the rollback can go on.
void on_rejoined_shard(self_ptr self, int32_t index);
/// Distributed: the lost shard of rollback number `rollback` had join_timeout to come back.
void on_rejoin_due(self_ptr self, uint64_t rollback);

// placement.cpp
/// Spawns the shards (simulate) or checks every ps task has joined (distributed), then
/// initialises them (or restores them from the checkpoint to resume) and starts the other
/// roles; ends in begin_training.
void place_roles(self_ptr self);
/// Starts worker w at `start_clock` (spawned here, or by its process); calls `done` with
/// whether it worked.
void start_worker(self_ptr self, int32_t w, int64_t start_clock, std::function<void(bool)> done);
/// Starts the evaluator (spawned here, or by its process); calls `done` once it is up.
void start_evaluator(self_ptr self, std::function<void(bool)> done);
/// Spawns shard s in this process (simulate) and monitors it.
void spawn_local_shard(self_ptr self, int32_t s);
/// The join handlers of a distributed run, and the end of the time to join.
caf::result<caf::ok_atom> on_shard_join(self_ptr self, int32_t index, ps_shard_actor shard);
caf::result<caf::ok_atom> on_node_join(self_ptr self, const std::string& type, int32_t index,
                                       task_node_actor node);
void on_join_due(self_ptr self);

} // namespace actorps::chief_detail
