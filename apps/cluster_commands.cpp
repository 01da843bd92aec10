#include "apps/cluster_commands.hpp"

#include "actors/deploy/deployment.hpp"
#include "actors/protocol/errors.hpp"
#include "apps/export_after_run.hpp"
#include "apps/log_level_flag.hpp"
#include "apps/training_flags.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace po = boost::program_options;

namespace actorps {

namespace {

struct cluster_flags {
  std::string cluster_file, task;
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
     "seconds to keep retrying peers that are not up yet (and for every task to join)")
    ("heartbeat-ms", po::value(&f.heartbeat_ms)->default_value(f.heartbeat_ms),
     "heartbeat interval between processes")
    ("peer-timeout-ms", po::value(&f.peer_timeout_ms)->default_value(f.peer_timeout_ms),
     "silence after which a peer process counts as lost");
  if (with_threads)
    desc.add_options()("threads", po::value(&f.threads)->default_value(f.threads),
                       "CAF scheduler threads (0: one per core)");
}

/// Reads the cluster and this task from the flags or TF_CONFIG; checks the task is `type`.
deployment_options resolve(const std::string& type, const cluster_flags& f) {
  tf_config cfg;
  if (!f.cluster_file.empty()) {
    cfg = read_tf_config_file(f.cluster_file);
  } else if (const char* env = std::getenv("TF_CONFIG"); env && *env) {
    cfg = parse_tf_config(env, "TF_CONFIG");
  } else {
    throw usage_error("no cluster: give --cluster FILE or set TF_CONFIG");
  }
  if (!f.task.empty()) cfg.task = parse_task(f.task);
  if (!cfg.task) throw usage_error("no task: give --task TYPE:INDEX or TF_CONFIG's \"task\"");
  cfg.cluster.address(*cfg.task);  // unknown type or index outside the cluster
  if (cfg.task->type != type)
    throw usage_error("this is `actorps " + type + "` but the task is " + cfg.task->text());
  if (f.connect_timeout <= 0) throw usage_error("--connect-timeout must be positive");
  if (f.heartbeat_ms <= 0 || f.peer_timeout_ms <= f.heartbeat_ms)
    throw usage_error("--peer-timeout-ms must exceed --heartbeat-ms, both positive");
  deployment_options opts;
  opts.cluster = std::move(cfg.cluster);
  opts.task = *cfg.task;
  opts.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.connect_timeout * 1000));
  opts.network.heartbeat = std::chrono::milliseconds(f.heartbeat_ms);
  opts.network.peer_timeout = std::chrono::milliseconds(f.peer_timeout_ms);
  opts.scheduler_threads = f.threads;
  return opts;
}

/// Runs a ps, worker or evaluator task and ends the process with the task's exit status.
[[noreturn]] void run_task_process(const std::string& type, const deployment_options& opts) {
  caf::actor_system_config cfg;
  configure_task_system(cfg, opts);
  caf::actor_system sys{cfg};
  int status = 2;
  try {
    status = run_task(sys, opts);
  } catch (const std::exception& e) {  // as cluster_command reports it, but `sys` must stay
    std::fprintf(stderr, "actorps %s: %s\n", type.c_str(), e.what());
  }
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
  auto plan = plan_training(flags);
  auto exporting = plan_export(plan, "chief");
  remote_tasks remote;
  remote.ps = opts.cluster.tasks("ps");
  remote.workers = opts.cluster.tasks("worker");
  if (opts.cluster.count("evaluator") > 0) remote.evaluator = opts.cluster.tasks("evaluator")[0];
  remote.data = plan.data;
  remote.join_timeout = opts.connect_timeout;
  plan.chief.remote = std::move(remote);
  auto with_threads = opts;
  with_threads.scheduler_threads = plan.scheduler_threads;
  auto result = run_chief_task(with_threads, std::move(plan.chief));
  if (!result) {
    std::fprintf(stderr, "actorps chief: the run failed: %s\n", describe(result.error()).c_str());
    return 1;
  }
  if (int status = print_summary(*result)) return status;
  return export_run(exporting, *result, nullptr);
}

} // namespace

int cluster_command(const std::string& type, const std::vector<std::string>& args) {
  bool chief = type == "chief";
  cluster_flags cf;
  training_flags tf;
  po::options_description desc("actorps " + type + " flags");
  desc.add_options()("help,h", "print this help");
  add_cluster_options(desc, cf, !chief);
  if (chief) add_training_options(desc, tf);
  std::string log_level = "info";  // the chief's is a training flag
  if (!chief) add_log_level_option(desc, log_level);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    if (vm.count("help")) {
      std::ostringstream out;
      out << "usage: actorps " << type << " [--cluster FILE --task " << type << ":INDEX] [flags]\n"
          << (chief ? "The chief takes the training flags and hands the spec to every task.\n"
                    : "Everything about the training comes from the chief.\n")
          << "\n" << desc;
      std::fputs(out.str().c_str(), stdout);
      return 0;
    }
    po::notify(vm);
    note_given_flags(vm, tf);
    apply_log_level(chief ? tf.log_level : log_level);
    auto opts = resolve(type, cf);
    if (chief) return run_chief(opts, tf, vm);
    run_task_process(type, opts);
  } catch (const po::error& e) {
    std::fprintf(stderr, "actorps %s: %s\n(see actorps %s --help)\n", type.c_str(), e.what(), type.c_str());
    return 2;
  } catch (const std::exception& e) {  // usage_error, cluster_error
    std::fprintf(stderr, "actorps %s: %s\n", type.c_str(), e.what());
    return 2;
  }
}

} // namespace actorps
