// `actorps run|chief|ps|worker|evaluator` as library calls: this process's task of a cluster
// (from --cluster FILE and --task, or TF_CONFIG), checked; then a ps, worker or evaluator task
// serves until the chief ends the run, and the chief trains the run its training options
// describe (the planner of actors/ps/training_flags.hpp, as `actorps simulate`).
#pragma once

#include "actors/ps.hpp"
#include "actors/ps/simulation_run.hpp"
#include "actors/ps/task_id.hpp"
#include "actors/ps/training_flags.hpp"
#include "actors/ps/value_bounds.hpp"

#include <functional>
#include <memory>
#include <string>

namespace actorps {

/// How a task joins its cluster, as the task commands' flags give it, before it is checked.
struct task_flags {
  std::string cluster_file;  ///< --cluster: a TF_CONFIG-style JSON file ("" TF_CONFIG's)
  std::string task;          ///< --task TYPE:INDEX ("" TF_CONFIG's "task")
  std::string bind;          ///< --bind: listen on this address instead of the cluster's
  std::string checkpoint_dir;  ///< a ps task's checkpoint root (`run`: the training flag's)
  value_bounds bounds;         ///< a ps task's shard (`run`: the training flags')
  std::string tls_cert, tls_key, tls_ca;  ///< --tls-cert, --tls-key, --tls-ca (PEM files)
  bool insecure = false;  ///< --insecure: no TLS, said loudly
  int data_port = 0;               ///< --data-port of a ps task (0: its own port + 1)
  int prometheus_port = 0;         ///< `run`, the chief: the training flag's
  std::string data_link = "auto";  ///< --data-link: auto, tcp, socket or shm
  double connect_timeout = 60;     ///< --connect-timeout, seconds
  int heartbeat_ms = 500, peer_timeout_ms = 4000, threads = 0;
};

/// This process's task of a cluster of processes.
class cluster_task_run {
public:
  /// Reads the cluster and this task: the cluster from flags.cluster_file or else TF_CONFIG,
  /// the task from flags.task or else TF_CONFIG's "task". `type` empty (`actorps run`): any
  /// role; else the task must be that type. Checks every flag (TLS files or --insecure
  /// included) and throws usage_error (or the cluster file's error) naming what is wrong.
  cluster_task_run(const std::string& type, const task_flags& flags);
  ~cluster_task_run();
  cluster_task_run(cluster_task_run&&) noexcept;
  cluster_task_run& operator=(cluster_task_run&&) noexcept;

  const task_id& task() const;
  /// How many tasks of `type` ("ps", "worker", ...) the cluster has.
  int count(const std::string& type) const;
  /// CAF scheduler threads of the task (0: one per core); throws usage_error naming --threads
  /// beyond max_scheduler_threads.
  void set_threads(int threads);

  /// A ps, worker or evaluator task: serves until the chief ends the run, then calls
  /// `before_exit` (completed: the chief ended a completed run) and ends the process with the
  /// task's exit status (README's "Exit codes"). CAF 0.17 may wait forever destroying the actor
  /// system of a task whose peers have gone, so it never returns.
  [[noreturn]] void serve(const std::function<void(bool completed)>& before_exit);

  /// A ps, worker or evaluator task asked to leave by a signal: tells the chief (waiting at
  /// most a second) and the log, then ends the process with 128 + signal. Callable from any
  /// thread; the first caller wins.
  [[noreturn]] void leave(int signal, const std::string& signal_name);

  /// The chief: plans the run `flags` describe (its ps and workers must be the cluster's),
  /// saying on stdout what it decided; throws usage_error naming a bad option.
  void plan(const training_flags& flags);

  /// The chief, once planned: trains the run with every other task, prints the summary and
  /// exports it; returns the exit status. `started` receives the call that stops the run once
  /// it has begun; `stopped_by_signal`, called once the run has ended, says the signal that
  /// asked this process to stop (0: none).
  int train(const std::function<void(stop_call)>& started,
            const std::function<int()>& stopped_by_signal);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace actorps
