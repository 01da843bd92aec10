#include "apps/cluster_commands.hpp"

#include "actors/deploy/data_port.hpp"
#include "actors/chief/cluster_view.hpp"
#include "actors/deploy/deployment.hpp"
#include "actors/deploy/exit_codes.hpp"
#include "actors/deploy/leave_notice.hpp"
#include "actors/link/data_link_path.hpp"
#include "actors/tls/tls_files.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"
#include "apps/command_line.hpp"
#include "apps/log_level_flag.hpp"
#include "apps/stop_signals.hpp"
#include "apps/training_flags.hpp"
#include "actors/node/export_plan.hpp"
#include "actors/node/print_summary.hpp"
#include "actors/node/training_plan.hpp"
#include "apps/value_bound_flags.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace po = boost::program_options;

namespace actorps {

namespace {

struct cluster_flags {
  std::string cluster_file, task, bind;
  std::string checkpoint_dir;  ///< a ps task's checkpoint root (`run`: the training flag's)
  value_bounds bounds;         ///< a ps task's shard (`run`: the training flags')
  tls_files tls;
  bool insecure = false;  ///< --insecure: no TLS, said loudly
  int data_port = 0;
  int prometheus_port = 0;         ///< `run`, the chief: the training flag's
  std::string data_link = "auto";  ///< --data-link (actors/link/data_link_path.hpp)
  double connect_timeout = 60;
  int heartbeat_ms = 500, peer_timeout_ms = 4000, threads = 0;
};

void add_cluster_options(po::options_description& desc, cluster_flags& f, bool with_threads) {
  desc.add_options()
    ("cluster", po::value(&f.cluster_file),
     "TF_CONFIG-style JSON file: {\"cluster\": {\"chief\": [...], \"ps\": [...], \"worker\": "
     "[...], \"evaluator\": [...]}}; without it the TF_CONFIG environment variable is read")
    ("task", po::value(&f.task), "this task, TYPE:INDEX (default: TF_CONFIG's \"task\")")
    ("connect-timeout", po::value(&f.connect_timeout)->default_value(f.connect_timeout),
     "seconds to keep retrying peers that are not up yet, and this task's own host name while "
     "it does not resolve (and for every task to join)")
    ("bind", po::value(&f.bind),
     "listen on this address of the host (0.0.0.0 or [::]: every interface) instead of the "
     "host the cluster names; peers still dial the cluster's names")
    ("data-port", po::value(&f.data_port)->default_value(f.data_port),
     "TCP port of a ps task's data link (0: the task's own port + 1); other tasks ignore it")
    ("data-link", po::value(&f.data_link)->default_value(f.data_link),
     "how a worker or evaluator reaches each shard's data link: auto (shared memory when the "
     "shard is on this host, else its local socket, else TCP), tcp, socket (the local socket "
     "alone) or shm (shared memory; fails where it cannot be had)")
    ("heartbeat-ms", po::value(&f.heartbeat_ms)->default_value(f.heartbeat_ms),
     "heartbeat interval between processes")
    ("peer-timeout-ms", po::value(&f.peer_timeout_ms)->default_value(f.peer_timeout_ms),
     "silence after which a peer process counts as lost")
    ("tls-cert", po::value(&f.tls.cert),
     "PEM certificate of this task, signed by --tls-ca (scripts/make_certs.sh); with --tls-key "
     "and --tls-ca every CAF connection is mutual TLS and peers without a certificate of that "
     "CA are refused")
    ("tls-key", po::value(&f.tls.key), "PEM private key of --tls-cert")
    ("tls-ca", po::value(&f.tls.ca), "PEM certificate of the cluster's CA")
    ("insecure", po::bool_switch(&f.insecure),
     "run without TLS: any process that reaches a port of the cluster may join it, push, read "
     "the parameters or stop it. Without --tls-* or this flag the task refuses to start");
  if (with_threads)  // a ps, worker or evaluator task; the chief's are training flags
    desc.add_options()("threads", po::value(&f.threads)->default_value(f.threads),
                       "CAF scheduler threads (0: one per core)")
      ("prometheus-port", po::value(&f.prometheus_port), prometheus_port_help);
}

/// A ps task's own shard settings (`actorps ps`; `actorps run` has them as training flags).
void add_shard_options(po::options_description& desc, cluster_flags& f) {
  desc.add_options()
    ("checkpoint-dir", po::value(&f.checkpoint_dir),
     "a ps task writes checkpoint files only under this directory (the chief's --checkpoint-dir "
     "or one above it); a request for any other is refused. Without it the task writes none "
     "(use --checkpoint-writer chief)");
  add_value_bound_options(desc, f.bounds);
}

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
deployment_options resolve(const std::string& type, const cluster_flags& f) {
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
  if (auto why = check_tls_files(f.tls); !why.empty()) throw usage_error(why);
  auto link_path = parse_data_link_path(f.data_link);
  if (!link_path) throw usage_error("--data-link " + f.data_link + " is none of auto, tcp, socket, shm");
  // Last: a task given bad flags hears of those first.
  if (f.insecure && f.tls.enabled())
    throw usage_error("--insecure with --tls-cert/--tls-key/--tls-ca: give one or the other");
  if (!f.insecure && !f.tls.enabled())
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
  opts.tls = f.tls;
  return opts;
}

/// Runs a ps, worker or evaluator task and ends the process with the task's exit status.
[[noreturn]] void run_task_process(const std::string& type, const deployment_options& opts) {
  // SIGTERM or SIGINT to a ps, worker or evaluator: it leaves at once, saying so to its log and
  // to the chief (which logs a leave, not a broken connection, and waits for its restart, as
  // for any lost task).
  static stop_signals signals;  // never destroyed: the process ends with _Exit
  auto leave = [name = opts.task.text()](int signal) {
    static std::mutex leaving;  // held to the end: the first of two threads here says it
    std::lock_guard<std::mutex> guard(leaving);
    auto status = exit_code::signalled(signal);
    // A chief that does not answer within the bound (lost, or the one that sent the signal to
    // every task) does not hold the exit up for longer.
    bool told = tell_chief_leaving(stop_signals::name(signal), std::chrono::milliseconds(1000));
    log_line(name, std::string(stop_signals::name(signal)) + ": leaving"
                     + (told ? " (the chief knows)" : "") + ", exiting " + std::to_string(status));
    std::fflush(nullptr);
    std::_Exit(status);
  };
  signals.on_signal([leave](int signal, int) { leave(signal); });
  caf::actor_system_config cfg;
  configure_task_system(cfg, opts);
  caf::actor_system sys{cfg};
  int status = 2;
  try {
    status = run_task(sys, opts);
  } catch (const std::exception& e) {  // as cluster_command reports it, but `sys` must stay
    std::fprintf(stderr, "actorps %s: %s\n", type.c_str(), e.what());
  }
  // A signal to every process at once (`kubectl delete`): the chief's stop, or a shard's loss,
  // may end this task before the signal thread has run. It was told to stop all the same.
  if (status != exit_code::success)
    if (int arrived = signals.arrived()) leave(arrived);
  // The task's work is done. CAF 0.17's network layer keeps references to local actors that a
  // peer has seen (here: the worker or evaluator the chief talked to) until that peer releases
  // them, which a peer that has already exited never does; ~actor_system would then wait for
  // their detached threads forever (seen in about one clean run in five, and after a lost
  // chief). Leave at once instead: the OS closes every socket.
  std::fflush(nullptr);
  std::_Exit(status);
}

int run_chief(const deployment_options& opts, training_flags flags, const po::variables_map& vm) {
  // The cluster fixes the number of shards and workers; explicit flags must agree with it.
  auto fix = [&](const char* flag, int& value, int count) {
    if (!vm[flag].defaulted() && value != count)
      throw usage_error(std::string("--") + flag + " " + std::to_string(value) + " disagrees with the "
                        + "cluster, which has " + std::to_string(count));
    value = count;
  };
  fix("ps", flags.ps, opts.cluster.count("ps"));
  fix("workers", flags.workers, opts.cluster.count("worker"));
  if (flags.replicas > 0 && flags.ps < 2)  // ps:i's standby runs in ps:(i+1) mod P
    throw usage_error("--replicas " + std::to_string(flags.replicas) + " needs at least 2 ps tasks "
                      "(ps:i's standby runs in ps:(i+1) mod P); the cluster has "
                      + std::to_string(flags.ps));
  auto plan = plan_training(flags);
  auto exporting = plan_export(plan, "chief");
  remote_tasks remote;
  remote.ps = opts.cluster.tasks("ps");
  remote.workers = opts.cluster.tasks("worker");
  if (opts.cluster.count("evaluator") > 0) remote.evaluator = opts.cluster.tasks("evaluator")[0];
  remote.data = plan.data;
  plan.chief.source = plan.data;  // a followed stream: the chief watches the directory
  remote.join_timeout = opts.connect_timeout;
  remote.cluster_view = cluster_view_text(opts.cluster.jobs);
  plan.chief.remote = std::move(remote);
  auto with_threads = opts;
  with_threads.scheduler_threads = plan.scheduler_threads;
  // SIGTERM or SIGINT: the chief stops the run cleanly (interrupt.cpp), or with --follow ends
  // the stream, the run finishing as at its last clock (follow.cpp); a second one, at once.
  stop_signals signals;
  auto result = run_chief_task(with_threads, std::move(plan.chief), [&](stop_request stop) {
    signals.on_signal([stop](int signal, int count) {
      log_line("chief", std::string(stop_signals::name(signal))
                          + (count > 1 ? " again" : " received") + ": stopping the run");
      stop(stop_signals::name(signal));
    });
  });
  signals.on_signal(nullptr);
  const int stopped_by = signals.arrived();  // also one the signal thread has not handed on
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
  return export_run(exporting, *result, nullptr);
}

} // namespace

int cluster_command(const std::string& command, const std::vector<std::string>& args) {
  // `run` takes its role from the task; the others are that role.
  const bool any_role = command == "run";
  const std::string type = any_role ? "" : command;
  const bool chief_flags = any_role || type == "chief";
  cluster_flags cf;
  training_flags tf;
  po::options_description desc("actorps " + command + " flags");
  desc.add_options()("help,h", "print this help");
  add_cluster_options(desc, cf, !chief_flags);
  if (chief_flags) add_training_options(desc, tf);
  if (chief_flags) add_replica_options(desc, tf);
  if (chief_flags) add_stream_options(desc, tf);
  if (type == "ps") add_shard_options(desc, cf);
  std::string log_level = "info";  // the chief's (and `run`'s) is a training flag
  if (!chief_flags) add_log_level_option(desc, log_level);
  try {
    auto vm = parse_flags(args, desc);
    if (vm.count("help")) {
      std::ostringstream out;
      if (any_role)
        out << "usage: actorps run [--cluster FILE] [--task TYPE:INDEX] [flags]\n"
            << "One command for every replica: the task (from --task, or TF_CONFIG's \"task\") "
               "says which role\nthis process is. The chief uses the training flags; a ps, worker "
               "or evaluator ignores\nthem (the chief hands the spec to every task) and uses "
               "--threads and the cluster flags.\n";
      else
        out << "usage: actorps " << type << " [--cluster FILE --task " << type
            << ":INDEX] [flags]\n"
            << (type == "chief" ? "The chief takes the training flags and hands the spec to "
                                  "every task.\n"
                                : "Everything about the training comes from the chief.\n");
      out << "\n" << desc;
      std::fputs(out.str().c_str(), stdout);
      return 0;
    }
    po::notify(vm);
    note_given_flags(vm, tf);
    apply_log_level(chief_flags ? tf.log_level : log_level);
    if (chief_flags) cf.prometheus_port = tf.prometheus_port;
    if (any_role) cf.checkpoint_dir = tf.checkpoint_dir, cf.bounds = tf.bounds;
    auto opts = resolve(type, cf);
    if (opts.task.type == "chief") return run_chief(opts, tf, vm);
    if (chief_flags) {  // `run`: --threads is the shared flag
      check_threads(tf.threads);
      opts.scheduler_threads = tf.threads;
    }
    run_task_process(opts.task.type, opts);
  } catch (const po::error& e) {
    std::fprintf(stderr, "actorps %s: %s\n(see actorps %s --help)\n", command.c_str(), e.what(),
                 command.c_str());
    return 2;
  } catch (const std::exception& e) {  // usage_error, cluster_error
    std::fprintf(stderr, "actorps %s: %s\n", command.c_str(), e.what());
    return 2;
  }
}

} // namespace actorps
