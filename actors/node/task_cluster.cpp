// task_cluster (actors/ps.hpp): one process's task in a cluster of processes running a loop of
// the user's own. A ps task hosts its shard (deployment.hpp's serve_shard_of_own_loop); a worker
// task connects to every shard over the data link and initialises it — every worker sends the
// same init and a shard keeps the first, so no task waits for another to start (a change of the
// number of shards meets at ps:0: task_cluster_scale.cpp).
#include "actors/node/task_cluster_impl.hpp"

#include "actors/deploy/deployment.hpp"
#include "actors/protocol/system_config.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

namespace actorps {

namespace {

caf::error not_connected() {
  return caf::make_error(caf::sec::runtime_error, "not connected: call worker() first");
}

} // namespace

namespace detail {

caf::expected<std::vector<remote_shard>> connect_ps_tasks(task_cluster::impl& im, int from,
                                                          int to) {
  auto& core = *im.core;
  std::vector<remote_shard> reached;
  for (int s = from; s < to; ++s) {
    auto shard = connect_shard(*core.sys, im.cluster.address({"ps", s}), s, core.opts.timeout,
                               core.opts.timeout);
    if (!shard) {
      for (auto& r : reached) r.close();
      return shard.error();
    }
    reached.push_back(std::move(*shard));
  }
  return reached;
}

void use_shards(task_cluster::impl& im, std::vector<remote_shard> remote) {
  auto& core = *im.core;
  im.remote = std::move(remote);
  core.shards.clear();
  for (const auto& r : im.remote) core.shards.push_back(r.handle);
  core.destinations = destinations_of(im.remote);
  core.stop = [remote = im.remote] {
    for (const auto& r : remote) r.close();
  };
}

caf::error tell_done(task_cluster::impl& im, caf::scoped_actor& self, const ps_task_actor& task) {
  caf::error failed;
  self->request(task, im.core->opts.timeout, done_atom::value, static_cast<int32_t>(im.task.index))
    .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
  return failed;
}

} // namespace detail

task_cluster::task_cluster(const std::string& tf_config, const model_spec& model,
                           cluster_options opts, int shards, int workers)
  : impl_(std::make_shared<impl>()) {
  auto& im = *impl_;
  try {
    auto cfg = parse_tf_config(tf_config, "TF_CONFIG", loop_owner::user);
    if (!cfg.task) throw cluster_error("TF_CONFIG: no \"task\": which task is this process?");
    im.cluster = std::move(cfg.cluster);
    im.task = *cfg.task;
  } catch (const cluster_error& e) {
    throw std::invalid_argument(e.what());
  }
  const int listed = im.cluster.count("ps");
  if (shards < 0 || shards > listed)
    throw std::invalid_argument("shards: 1 to the " + std::to_string(listed)
                                + " ps task(s) TF_CONFIG lists, or 0 for all (got "
                                + std::to_string(shards) + ")");
  const int listed_workers = im.cluster.count("worker");
  if (workers < 0 || workers > listed_workers)
    throw std::invalid_argument("workers: 1 to the " + std::to_string(listed_workers)
                                + " worker task(s) TF_CONFIG lists, or 0 for all (got "
                                + std::to_string(workers) + ")");
  opts.ps = shards > 0 ? shards : listed;
  opts.workers = workers > 0 ? workers : listed_workers;
  im.in_job = im.task.type == "worker" && im.task.index < opts.workers;
  im.core = std::make_shared<detail::cluster_core>();
  auto& core = *im.core;
  core.opts = opts;
  core.spec = detail::shards_spec(model, opts);
  core.layout = std::make_unique<block_layout>(core.spec);  // throws for an invalid model
  configure_system(core.cfg, 0, network_settings{});
  core.sys = std::make_unique<caf::actor_system>(core.cfg);
}

task_cluster::~task_cluster() = default;

bool task_cluster::is_ps() const { return impl_->task.type == "ps"; }
int task_cluster::index() const { return impl_->task.index; }
int task_cluster::workers() const { return impl_->core->opts.workers; }
bool task_cluster::in_job() const { return impl_->in_job; }
int64_t task_cluster::joined_at() const { return impl_->joined_at; }
std::size_t task_cluster::total_floats() const { return impl_->core->layout->total_floats(); }

int task_cluster::serve() {
  if (!is_ps()) throw std::logic_error("serve() is for a ps task; this is " + impl_->task.text());
  return serve_shard_of_own_loop(*impl_->core->sys, impl_->cluster, impl_->task.index,
                                 impl_->core->opts.workers);
}

caf::expected<worker_client> task_cluster::worker() {
  auto& im = *impl_;
  if (is_ps()) throw std::logic_error("worker() is for a worker task; this is " + im.task.text());
  auto& core = *im.core;
  if (im.remote.empty()) {
    const bool spare = !im.in_job;
    if (spare) {
      if (auto err = detail::await_joining(im)) return err;
    }
    auto remote = detail::connect_ps_tasks(im, 0, core.opts.ps);
    if (!remote) return remote.error();
    detail::use_shards(im, std::move(*remote));
    core.shards_elsewhere = true;
    // A worker taken in by a change finds the shards at that change's state: no init.
    if (auto err = spare ? caf::error{} : detail::init_shards(core)) {
      im.remote.clear();  // not connected: the core closes the links when it goes
      return err;
    }
  }
  return detail::make_worker_client(im.core, static_cast<int32_t>(im.task.index));
}

caf::error task_cluster::await_others() {
  auto& im = *impl_;
  if (is_ps()) throw std::logic_error("await_others() is for a worker task; this is " + im.task.text());
  if (im.remote.empty()) return not_connected();
  // ps:0 knows the job's workers (a change of workers meets there) and answers once the others
  // said done to it; a worker says done to the shards, its last push applied, before ps:0.
  caf::scoped_actor self{*im.core->sys};
  caf::error failed;
  self->request(im.remote[0].task, caf::infinite, done_atom::value, others_atom::value,
                static_cast<int32_t>(im.task.index))
    .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
  return failed;
}

caf::error task_cluster::finish() {
  auto& im = *impl_;
  if (is_ps()) throw std::logic_error("finish() is for a worker task; this is " + im.task.text());
  if (im.remote.empty()) return not_connected();
  caf::scoped_actor self{*im.core->sys};
  // The shards stop waiting for this worker (worker_client::finish does the same; twice is
  // harmless), then its ps tasks hear it is done. A worker a change left out is no longer
  // one the shards wait for.
  for (const auto& shard : im.core->shards) {
    if (!im.in_job) break;
    caf::error failed;
    self->request(shard, im.core->opts.timeout, done_atom::value,
                  static_cast<int32_t>(im.task.index))
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
    if (failed) return failed;
  }
  for (const auto& r : im.remote)  // the ps tasks of the shards in use
    if (auto err = detail::tell_done(im, self, r.task)) return err;
  // and the spares beyond them, so that their serve() returns too
  return detail::tell_spares_done(im);
}

caf::expected<std::vector<float>> task_cluster::snapshot() {
  if (impl_->remote.empty()) return not_connected();
  return detail::snapshot_shards(*impl_->core);
}

caf::expected<cluster_checkpoint> task_cluster::checkpoint(const std::string& root) {
  if (impl_->remote.empty()) return not_connected();
  return detail::checkpoint_shards(*impl_->core, root);
}

caf::expected<int64_t> task_cluster::restore(const std::string& path) {
  if (impl_->remote.empty()) return not_connected();
  return detail::restore_shards(*impl_->core, path);
}

} // namespace actorps
