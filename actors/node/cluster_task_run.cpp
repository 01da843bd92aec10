// cluster_task_run: a task of a cluster of processes from the task commands' flags; the chief
// trains through the planner (training_plan.hpp), as `actorps simulate` does.
#include "actors/ps/cluster_task_run.hpp"

#include "actors/chief/cluster_view.hpp"
#include "actors/deploy/data_port.hpp"
#include "actors/deploy/deployment.hpp"
#include "actors/deploy/exit_codes.hpp"
#include "actors/deploy/leave_notice.hpp"
#include "actors/link/data_link_path.hpp"
#include "actors/node/export_plan.hpp"
#include "actors/node/print_summary.hpp"
#include "actors/node/training_plan.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"
#include "actors/tls/tls_files.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace actorps {

namespace {

/// --threads of a task: CAF's scheduler threads, 0 for one per core, bounded as the chief's.
void check_threads(int threads) {
  const int bound = max_scheduler_threads();
  if (threads < 0 || threads > bound)
    throw usage_error("--threads must be 0 (one per core) to " + std::to_string(bound)
                      + " (4 per core of this host), got " + std::to_string(threads));
}

/// TF_CONFIG from the environment, when it is set and not empty.
const char* tf_config_env() {
  const char* env = std::getenv("TF_CONFIG");
  return env && *env ? env : nullptr;
}

/// Reads the cluster and this task from the flags or TF_CONFIG: the cluster from --cluster FILE
/// or else TF_CONFIG; the task from --task, or else TF_CONFIG's "task" (also beside --cluster).
/// `type` empty (`actorps run`): any role; else the task must be that type.
deployment_options resolve(const std::string& type, const task_flags& f) {
  tf_config cfg;
  if (!f.cluster_file.empty()) {
    cfg = read_tf_config_file(f.cluster_file);
    if (!cfg.task && f.task.empty())
      if (const char* env = tf_config_env()) cfg.task = parse_tf_config_task(env, "TF_CONFIG");
  } else if (const char* env = tf_config_env()) {
    cfg = parse_tf_config(env, "TF_CONFIG");
  } else {
    throw usage_error("no cluster: give --cluster FILE or set TF_CONFIG");
  }
  if (!f.task.empty()) cfg.task = parse_task(f.task);
  if (!cfg.task) throw usage_error("no task: give --task TYPE:INDEX or TF_CONFIG's \"task\"");
  cfg.cluster.own_address(*cfg.task);  // unknown type or index outside the cluster
  if (!type.empty() && cfg.task->type != type)
    throw usage_error("this is `actorps " + type + "` but the task is " + cfg.task->text());
  if (!(f.connect_timeout > 0 && f.connect_timeout <= 7 * 24 * 3600))
    throw usage_error("--connect-timeout must be positive and at most a week (604800 s), got "
                      + std::to_string(f.connect_timeout));
  check_threads(f.threads);
  if (f.data_port < 0 || f.data_port > 65535)
    throw usage_error("--data-port must be 0 (the task's port + 1) or a port, 1 to 65535");
  if (f.prometheus_port < 0 || f.prometheus_port > 65535)
    throw usage_error("--prometheus-port must be a port, 1 to 65535 (0: none), got "
                      + std::to_string(f.prometheus_port));
  auto bind = f.bind;  // "[::]" as a URL writes it: the address is "::"
  if (bind.size() >= 2 && bind.front() == '[' && bind.back() == ']')
    bind = bind.substr(1, bind.size() - 2);
  if (!f.bind.empty() && bind.empty()) throw usage_error("--bind needs an address, e.g. 0.0.0.0");
  if (cfg.task->type == "ps") data_port_of(cfg.cluster, *cfg.task, f.data_port);  // refused now
  if (f.heartbeat_ms <= 0 || f.peer_timeout_ms <= f.heartbeat_ms)
    throw usage_error("--peer-timeout-ms must exceed --heartbeat-ms, both positive");
  const tls_files tls{f.tls_cert, f.tls_key, f.tls_ca};
  if (auto why = check_tls_files(tls); !why.empty()) throw usage_error(why);
  auto link_path = parse_data_link_path(f.data_link);
  if (!link_path) throw usage_error("--data-link " + f.data_link + " is none of auto, tcp, socket, shm");
  // Last: a task given bad flags hears of those first.
  if (f.insecure && tls.enabled())
    throw usage_error("--insecure with --tls-cert/--tls-key/--tls-ca: give one or the other");
  if (!f.insecure && !tls.enabled())
    throw usage_error("no TLS certificates: give --tls-cert, --tls-key and --tls-ca (made by "
                      "scripts/make_certs.sh; scripts/launch_local.sh makes its own), or "
                      "--insecure to run without TLS");
  if (f.insecure)  // whatever the log level
    std::fprintf(stderr, "WARNING: %s: --insecure: no TLS; any process that reaches this "
                         "cluster's ports may join it, push, read its parameters or stop it\n",
                 cfg.task->text().c_str());
  set_data_link_path(*link_path);
  deployment_options opts;
  opts.cluster = std::move(cfg.cluster);
  opts.task = *cfg.task;
  opts.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.connect_timeout * 1000));
  opts.bind = bind;
  opts.data_port = f.data_port;
  opts.prometheus_port = static_cast<uint16_t>(f.prometheus_port);
  opts.network.heartbeat = std::chrono::milliseconds(f.heartbeat_ms);
  opts.network.peer_timeout = std::chrono::milliseconds(f.peer_timeout_ms);
  opts.scheduler_threads = f.threads;
  check_value_bounds(f.bounds);
  opts.shard = {f.checkpoint_dir, f.bounds};
  opts.tls = tls;
  return opts;
}

} // namespace

struct cluster_task_run::impl {
  deployment_options opts;
  std::unique_ptr<chief_config> chief;  ///< the chief's run, once planned
  export_request exporting;
};

cluster_task_run::cluster_task_run(const std::string& type, const task_flags& flags)
    : impl_(std::make_unique<impl>()) {
  impl_->opts = resolve(type, flags);
}

cluster_task_run::~cluster_task_run() = default;
cluster_task_run::cluster_task_run(cluster_task_run&&) noexcept = default;
cluster_task_run& cluster_task_run::operator=(cluster_task_run&&) noexcept = default;

const task_id& cluster_task_run::task() const { return impl_->opts.task; }

int cluster_task_run::count(const std::string& type) const {
  return impl_->opts.cluster.count(type);
}

void cluster_task_run::set_threads(int threads) {
  check_threads(threads);
  impl_->opts.scheduler_threads = threads;
}

void cluster_task_run::serve(const std::function<void(bool completed)>& before_exit) {
  const auto& opts = impl_->opts;
  caf::actor_system_config cfg;
  configure_task_system(cfg, opts);
  caf::actor_system sys{cfg};
  int status = exit_code::usage;
  try {
    status = run_task(sys, opts);
  } catch (const std::exception& e) {  // as the command reports it, but `sys` must stay
    std::fprintf(stderr, "actorps %s: %s\n", opts.task.type.c_str(), e.what());
  }
  if (before_exit) before_exit(status == exit_code::success);
  // The task's work is done. CAF 0.17's network layer keeps references to local actors that a
  // peer has seen (here: the worker or evaluator the chief talked to) until that peer releases
  // them, which a peer that has already exited never does; ~actor_system would then wait for
  // their detached threads forever (seen in about one clean run in five, and after a lost
  // chief). Leave at once instead: the OS closes every socket.
  std::fflush(nullptr);
  std::_Exit(status);
}

void cluster_task_run::leave(int signal, const std::string& signal_name) {
  static std::mutex leaving;  // held to the end: the first of two threads here says it
  std::lock_guard<std::mutex> guard(leaving);
  auto status = exit_code::signalled(signal);
  // A chief that does not answer within the bound (lost, or the one that sent the signal to
  // every task) does not hold the exit up for longer.
  bool told = tell_chief_leaving(signal_name, std::chrono::milliseconds(1000));
  log_line(impl_->opts.task.text(), signal_name + ": leaving"
                                      + (told ? " (the chief knows)" : "") + ", exiting "
                                      + std::to_string(status));
  std::fflush(nullptr);
  std::_Exit(status);
}

void cluster_task_run::plan(const training_flags& flags) {
  if (flags.replicas > 0 && flags.ps < 2)  // ps:i's standby runs in ps:(i+1) mod P
    throw usage_error("--replicas " + std::to_string(flags.replicas) + " needs at least 2 ps tasks "
                      "(ps:i's standby runs in ps:(i+1) mod P); the cluster has "
                      + std::to_string(flags.ps));
  const auto& opts = impl_->opts;
  auto plan = plan_training(flags);
  impl_->exporting = plan_export(plan, "chief");
  remote_tasks remote;
  remote.ps = opts.cluster.tasks("ps");
  remote.workers = opts.cluster.tasks("worker");
  if (opts.cluster.count("evaluator") > 0) remote.evaluator = opts.cluster.tasks("evaluator")[0];
  remote.data = plan.data;
  plan.chief.source = plan.data;  // a followed stream: the chief watches the directory
  remote.join_timeout = opts.connect_timeout;
  remote.cluster_view = cluster_view_text(opts.cluster.jobs);
  plan.chief.remote = std::move(remote);
  impl_->opts.scheduler_threads = plan.scheduler_threads;
  impl_->chief = std::make_unique<chief_config>(std::move(plan.chief));
}

int cluster_task_run::train(const std::function<void(stop_call)>& started,
                            const std::function<int()>& stopped_by_signal) {
  // SIGTERM or SIGINT: the chief stops the run cleanly (interrupt.cpp), or with --follow ends
  // the stream, the run finishing as at its last clock (follow.cpp); a second one, at once.
  auto result = run_chief_task(impl_->opts, std::move(*impl_->chief), started);
  const int stopped_by = stopped_by_signal ? stopped_by_signal() : 0;
  auto interrupted = stopped_by ? exit_code::signalled(stopped_by) : exit_code::retryable;
  if (!result) {
    std::fprintf(stderr, "actorps chief: the run failed: %s\n", describe(result.error()).c_str());
    // Asked to stop, and the tasks went with it (every pod gets SIGTERM from `kubectl delete`
    // or a drained node): what failed is the stop, not the run; a restart goes on.
    if (stopped_by) return interrupted;
    const auto& err = result.error();
    if (is_error(err, errc::run_interrupted)) return interrupted;
    if (is_error(err, errc::peer_unreachable)) return exit_code::retryable;
    return exit_code::failed;
  }
  // non-zero when every worker was lost, or every checkpoint or the final one failed
  const int summary_status = print_summary(*result);
  if (!result->stopped_by.empty()) {
    std::printf("  stopped early by %s at clock %lld of %lld; not exported (exit %d: restart "
                "with --resume to go on)\n",
                result->stopped_by.c_str(), static_cast<long long>(result->stopped_at),
                static_cast<long long>(result->planned_clocks), interrupted);
    return interrupted;
  }
  if (summary_status) return summary_status;
  return export_run(impl_->exporting, *result, nullptr);
}

} // namespace actorps
