// What a task_cluster (actors/ps.hpp) holds: its cluster and task, the core its worker client
// shares, and a worker task's connections to the ps tasks. Private to actors/node
// (task_cluster.cpp, task_cluster_scale.cpp).
#pragma once

#include "actors/deploy/cluster_spec.hpp"
#include "actors/deploy/remote_shard.hpp"
#include "actors/node/cluster_core.hpp"

#include <caf/scoped_actor.hpp>

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
  // A worker: in the job (a spare not taken in yet, or one a scale left out: not), and the
  // clock it went on from when taken in.
  bool in_job = true;
  int64_t joined_at = 0;
};

namespace detail {
/// ps:from .. ps:to-1 of the cluster, each with its data link; the first that cannot be reached
/// closes those reached and names itself.
caf::expected<std::vector<remote_shard>> connect_ps_tasks(task_cluster::impl& im, int from,
                                                          int to);
/// The worker talks to `remote` (the shards in order) from now on: im.remote, and the core's
/// handles, in-place destinations and what closes them.
void use_shards(task_cluster::impl& im, std::vector<remote_shard> remote);
/// Tells the ps task that this worker is done; its error, if any.
caf::error tell_done(task_cluster::impl& im, caf::scoped_actor& self, const ps_task_actor& task);
/// A worker's finish(): the ps tasks beyond the shards in use that it has not told yet (spares
/// never taken in) hear that it is done, so that their serve() returns.
caf::error tell_spares_done(task_cluster::impl& im);
/// A spare worker task's wait at ps:0 until a change takes it in: the core's spec at the job's
/// size then (every change replayed), joined_at its clock; or the error why not (every ps
/// task then told this worker is done).
caf::error await_joining(task_cluster::impl& im);
} // namespace detail

} // namespace actorps
