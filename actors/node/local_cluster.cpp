// local_cluster (actors/ps.hpp): the shards of a user-driven run, in this process.
#include "actors/node/cluster_core.hpp"

#include "actors/protocol/system_config.hpp"
#include "actors/roles/ps_shard.hpp"

#include <caf/all.hpp>

namespace actorps {

local_cluster::local_cluster(const model_spec& model, const cluster_options& opts)
  : core_(std::make_shared<detail::cluster_core>()) {
  if (opts.ps < 1 || opts.workers < 1)
    throw std::invalid_argument("a cluster needs at least one shard and one worker");
  auto& core = *core_;
  core.opts = opts;
  core.spec = detail::shards_spec(model, opts);
  core.layout = std::make_unique<block_layout>(core.spec);  // throws for an invalid model
  configure_system(core.cfg, 0);
  core.sys = std::make_unique<caf::actor_system>(core.cfg);
  for (int s = 0; s < opts.ps; ++s) core.shards.push_back(spawn_ps_shard(*core.sys, s));
  core.stop = [shards = core.shards] {
    for (auto& s : shards) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  };
  if (auto err = detail::init_shards(core)) throw std::invalid_argument(describe(err));
}

local_cluster::~local_cluster() = default;

std::size_t local_cluster::total_floats() const { return core_->layout->total_floats(); }

worker_client local_cluster::worker(int w) {
  if (w < 0 || w >= core_->opts.workers)
    throw std::invalid_argument("worker " + std::to_string(w) + " is outside the cluster's "
                                + std::to_string(core_->opts.workers) + " workers");
  return detail::make_worker_client(core_, static_cast<int32_t>(w));
}

caf::expected<std::vector<float>> local_cluster::snapshot() {
  return detail::snapshot_shards(*core_);
}

caf::expected<cluster_checkpoint> local_cluster::checkpoint(const std::string& root) {
  return detail::checkpoint_shards(*core_, root);
}

caf::expected<int64_t> local_cluster::restore(const std::string& path) {
  return detail::restore_shards(*core_, path);
}

caf::expected<int64_t> local_cluster::scale(int ps, int workers) {
  return detail::scale_shards(*core_, ps, workers);
}

} // namespace actorps
