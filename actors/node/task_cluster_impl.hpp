// What a task_cluster (actors/ps.hpp) holds: its cluster and task, the core its worker client
// shares, and a worker task's connections to the ps tasks. Private to actors/node
// (task_cluster.cpp, task_cluster_scale.cpp).
#pragma once

#include "actors/deploy/cluster_spec.hpp"
#include "actors/deploy/remote_shard.hpp"
#include "actors/node/cluster_core.hpp"

#include <memory>
#include <set>
#include <vector>

namespace actorps {

struct task_cluster::impl {
  cluster_spec cluster;
  task_id task;
  std::shared_ptr<detail::cluster_core> core;
  std::vector<remote_shard> remote;  // a worker: its shards, connected and initialised
  // A worker: the ps tasks beyond the shards in use that it told it is done (a shrink removed
  // them); finish() tells the others beyond, spares never taken in.
  std::set<int32_t> told_done;
};

namespace detail {
/// A worker's finish(): the ps tasks beyond the shards in use that it has not told yet (spares
/// never taken in) hear that it is done, so that their serve() returns.
caf::error tell_spares_done(task_cluster::impl& im);
} // namespace detail

} // namespace actorps
