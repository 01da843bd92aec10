// Internal to the chief (chief.cpp: the training lifecycle; chief_placement.cpp: where the
// roles come from — spawned in this process, or joined over the network).
#pragma once

#include "actors/chief.hpp"
#include "actors/metrics.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
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

  bool eval_in_flight = false, training_over = false;
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

// chief_placement.cpp
/// Spawns the shards (simulate) or checks every ps task has joined (distributed), then
/// initialises them and starts the other roles; ends in begin_training.
void place_roles(self_ptr self);
/// The join handlers and the deadline of a distributed run.
caf::result<caf::ok_atom> on_shard_join(self_ptr self, int32_t index, ps_shard_actor shard);
caf::result<caf::ok_atom> on_node_join(self_ptr self, const std::string& type, int32_t index,
                                       task_node_actor node);
void on_join_deadline(self_ptr self);

} // namespace actorps::chief_detail
