#include "apps/cluster_commands.hpp"

#include "actors/ps/cluster_task_run.hpp"
#include "actors/ps/log_level.hpp"
#include "apps/command_line.hpp"
#include "apps/log_level_flag.hpp"
#include "apps/stop_signals.hpp"
#include "apps/training_flags.hpp"
#include "apps/value_bound_flags.hpp"

#include <cstdio>
#include <sstream>

namespace po = boost::program_options;

namespace actorps {

namespace {

void add_cluster_options(po::options_description& desc, task_flags& f, bool with_threads) {
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
    ("tls-cert", po::value(&f.tls_cert),
     "PEM certificate of this task, signed by --tls-ca (scripts/make_certs.sh); with --tls-key "
     "and --tls-ca every CAF connection is mutual TLS and peers without a certificate of that "
     "CA are refused")
    ("tls-key", po::value(&f.tls_key), "PEM private key of --tls-cert")
    ("tls-ca", po::value(&f.tls_ca), "PEM certificate of the cluster's CA")
    ("insecure", po::bool_switch(&f.insecure),
     "run without TLS: any process that reaches a port of the cluster may join it, push, read "
     "the parameters or stop it. Without --tls-* or this flag the task refuses to start");
  if (with_threads)  // a ps, worker or evaluator task; the chief's are training flags
    desc.add_options()("threads", po::value(&f.threads)->default_value(f.threads),
                       "CAF scheduler threads (0: one per core)")
      ("prometheus-port", po::value(&f.prometheus_port), prometheus_port_help);
}

/// A ps task's own shard settings (`actorps ps`; `actorps run` has them as training flags).
void add_shard_options(po::options_description& desc, task_flags& f) {
  desc.add_options()
    ("checkpoint-dir", po::value(&f.checkpoint_dir),
     "a ps task writes checkpoint files only under this directory (the chief's --checkpoint-dir "
     "or one above it); a request for any other is refused. Without it the task writes none "
     "(use --checkpoint-writer chief)");
  add_value_bound_options(desc, f.bounds);
}

/// Serves a ps, worker or evaluator task and ends the process with the task's exit status.
[[noreturn]] void run_task_process(cluster_task_run& run) {
  // SIGTERM or SIGINT to a ps, worker or evaluator: it leaves at once, saying so to its log and
  // to the chief (which logs a leave, not a broken connection, and waits for its restart, as
  // for any lost task).
  static stop_signals signals;  // never destroyed: the process ends with _Exit
  signals.on_signal([&run](int signal, int) { run.leave(signal, stop_signals::name(signal)); });
  run.serve([&run](bool completed) {
    // A signal to every process at once (`kubectl delete`): the chief's stop, or a shard's
    // loss, may end this task before the signal thread has run. It was told to stop all the
    // same.
    if (!completed)
      if (int arrived = signals.arrived()) run.leave(arrived, stop_signals::name(arrived));
  });
}

int run_chief(cluster_task_run& run, training_flags flags, const po::variables_map& vm) {
  // The cluster fixes the number of shards and workers; explicit flags must agree with it.
  auto fix = [&](const char* flag, int& value, int count) {
    if (!vm[flag].defaulted() && value != count)
      throw usage_error(std::string("--") + flag + " " + std::to_string(value) + " disagrees with the "
                        + "cluster, which has " + std::to_string(count));
    value = count;
  };
  fix("ps", flags.ps, run.count("ps"));
  fix("workers", flags.workers, run.count("worker"));
  run.plan(flags);
  stop_signals signals;
  return run.train(
    [&](stop_call stop) {
      signals.on_signal([stop](int signal, int count) {
        log_info("chief", std::string(stop_signals::name(signal))
                            + (count > 1 ? " again" : " received") + ": stopping the run");
        stop(stop_signals::name(signal));
      });
    },
    [&] {
      signals.on_signal(nullptr);
      return signals.arrived();  // also one the signal thread has not handed on
    });
}

} // namespace

int cluster_command(const std::string& command, const std::vector<std::string>& args) {
  // `run` takes its role from the task; the others are that role.
  const bool any_role = command == "run";
  const std::string type = any_role ? "" : command;
  const bool chief_flags = any_role || type == "chief";
  task_flags cf;
  training_flags tf;
  po::options_description desc("actorps " + command + " flags");
  desc.add_options()("help,h", "print this help");
  add_cluster_options(desc, cf, !chief_flags);
  if (chief_flags) add_training_options(desc, tf);
  if (chief_flags) add_replica_options(desc, tf);
  if (chief_flags) add_copy_ahead_option(desc, tf);
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
    cluster_task_run run(type, cf);
    if (run.task().type == "chief") return run_chief(run, tf, vm);
    if (chief_flags) run.set_threads(tf.threads);  // `run`: --threads is the shared flag
    run_task_process(run);
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
