// serve_task and train_cluster (actors/ps.hpp): one task of a runtime-owned run spread over
// processes by TF_CONFIG, on deployment.hpp's run_task and run_chief_task.
#include "actors/node/training_plan.hpp"

#include "actors/data/load_split.hpp"
#include "actors/deploy/cluster_spec.hpp"
#include "actors/chief/cluster_view.hpp"
#include "actors/deploy/deployment.hpp"
#include "actors/protocol/log.hpp"

#include <caf/all.hpp>

namespace actorps {

namespace {

/// The cluster and this task from TF_CONFIG; throws cluster_error naming what is wrong.
deployment_options deployment_of(const std::string& tf_config, const task_options& task) {
  auto cfg = parse_tf_config(tf_config, "TF_CONFIG");
  if (!cfg.task) throw cluster_error("TF_CONFIG: no \"task\": which task is this process?");
  deployment_options d;
  d.cluster = std::move(cfg.cluster);
  d.task = *cfg.task;
  d.connect_timeout = task.connect_timeout;
  d.network.heartbeat = task.heartbeat;
  d.network.peer_timeout = task.peer_timeout;
  d.scheduler_threads = task.threads;
  return d;
}

} // namespace

caf::expected<task_id> task_of(const std::string& tf_config) {
  try {
    return deployment_of(tf_config, {}).task;
  } catch (const cluster_error& e) {
    return make_error(errc::invalid_spec, e.what());
  }
}

int serve_task(const std::string& tf_config, const task_options& task) {
  deployment_options d;
  try {
    d = deployment_of(tf_config, task);
    if (d.task.type == "chief")
      throw cluster_error("TF_CONFIG names the chief: this process should call train_cluster");
  } catch (const cluster_error& e) {
    log_line("actorps", e.what());
    return 2;
  }
  // Left to the end of the process on purpose (ps.hpp): never destroyed, never waited for.
  auto* cfg = new caf::actor_system_config;
  configure_task_system(*cfg, d);
  auto* sys = new caf::actor_system(*cfg);
  return run_task(*sys, d);
}

caf::expected<run_summary> train_cluster(const std::string& tf_config, train_options opts,
                                         const data_source& data, const task_options& task) {
  auto bad = [](const std::string& what) { return make_error(errc::invalid_spec, what); };
  deployment_options d;
  try {
    d = deployment_of(tf_config, task);
  } catch (const cluster_error& e) {
    return bad(e.what());
  }
  if (d.task.type != "chief")
    return bad("TF_CONFIG names " + d.task.text() + ": this process should call serve_task");
  if (!opts.export_dir.empty() || opts.export_every != 0)
    return bad("export_dir and export_every are train()'s (the command's chief: --export-dir)");
  // The cluster fixes the shards and workers; options left at their defaults follow it.
  const train_options defaults;
  auto fix = [&](const char* what, int& value, int fallback, int count) -> caf::error {
    if (value != fallback && value != count)
      return bad(std::string(what) + " " + std::to_string(value) + " disagrees with the cluster, "
                 + "which has " + std::to_string(count));
    value = count;
    return {};
  };
  data_source source = data;
  if (!opts.slice_auc.empty()) {
    try {
      set_slice_field(source, opts.slice_auc);
    } catch (const std::exception& e) {
      return bad(e.what());
    }
  }
  if (auto err = fix("ps", opts.ps, defaults.ps, d.cluster.count("ps"))) return err;
  if (auto err = fix("workers", opts.workers, defaults.workers, d.cluster.count("worker")))
    return err;
  std::shared_ptr<const dataset> test;  // the chief reads the shape from the test split
  int64_t rows = 0;
  try {
    test = load_split(source, false);
    rows = training_rows(source);
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  opts.source = source;  // what the planner checks the model against
  opts.slice_auc.clear();  // the source's slice field already
  // Faults, resizes and checkpoints are train()'s: a cluster's chief takes none from here (the
  // command's chief: --checkpoint-dir).
  opts.kills.clear();
  opts.resizes.clear();
  opts.checkpoint_dir.clear();
  opts.resume.clear();
  known_data known;
  known.source = source;
  known.train_rows = rows;
  known.cols = test->cols;
  known.classes = test->classes;
  training_plan plan;
  try {
    plan = plan_library_run(opts, known);
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  remote_tasks remote;
  remote.ps = d.cluster.tasks("ps");
  remote.workers = d.cluster.tasks("worker");
  if (d.cluster.count("evaluator") > 0) remote.evaluator = d.cluster.tasks("evaluator")[0];
  remote.data = source;
  remote.join_timeout = d.connect_timeout;
  remote.cluster_view = cluster_view_text(d.cluster.jobs);
  plan.chief.remote = std::move(remote);
  d.scheduler_threads = opts.threads > 0 ? opts.threads : task.threads;
  return run_chief_task(d, std::move(plan.chief));
}

} // namespace actorps
