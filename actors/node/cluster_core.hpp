// What local_cluster and task_cluster (actors/ps.hpp) share with the worker clients they hand
// out: the actor system, the run's spec and block layout, and one handle per shard — the shard
// itself in one process, a proxy over the data link to a shard in another (remote_shard.hpp).
// Private to actors/node.
#pragma once

#include "actors/protocol/messages.hpp"
#include "actors/protocol/parameter_destination.hpp"
#include "actors/ps.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace actorps::detail {

struct cluster_core {
  caf::actor_system_config cfg;  // before sys: the system keeps a reference to it
  std::unique_ptr<caf::actor_system> sys;
  cluster_options opts;
  train_spec spec;
  std::unique_ptr<block_layout> layout;
  std::vector<ps_shard_actor> shards;
  // The shards live in other processes: a push leaves this process (sent on a data link or
  // serialised by the middleman) before its reply can come, so it may point at the caller's
  // gradient, which the ticket holds until wait returns (worker_client.cpp).
  bool shards_elsewhere = false;
  // Over a data link, one per shard: where the proxy receives a reply in place (empty: no link).
  std::vector<std::shared_ptr<parameter_destination>> destinations;
  std::function<void()> stop;  // ends what the core started (shards, or proxies to them)
  // Bumped by a scale: each worker client talks to the shards and cuts by the layout it finds
  // here on its next call (none is in flight across a scale).
  std::atomic<uint64_t> generation{0};
  // The layouts before each scale: a client's conversation may still point at one.
  std::vector<std::unique_ptr<block_layout>> retired_layouts;

  ~cluster_core() {
    if (stop) stop();
  }
};

/// The spec the shards of a run get: the model and the options (a learning rate of 0 becomes
/// the optimizer's default). train() fills the options' shard part from its own.
train_spec shards_spec(const model_spec& model, const cluster_options& opts);

/// Sends every shard its part of the model's initial values; the first refusal, naming its shard.
caf::error init_shards(cluster_core& core);

/// The current values of every shard, flat in model order.
caf::expected<std::vector<float>> snapshot_shards(cluster_core& core);

/// Every shard's whole state at one clock: the largest of the shards' min clocks when asked
/// (a shard behind answers once it gets there; asked again when one passed it meanwhile).
struct shard_states {
  int64_t clock = 0;
  std::vector<wire_buffer> files;  ///< ShardCheckpoint, in shard order
};
caf::expected<shard_states> states_now(cluster_core& core);

/// local_cluster::checkpoint and restore (cluster_checkpoint.cpp).
caf::expected<cluster_checkpoint> checkpoint_shards(cluster_core& core, const std::string& root);
caf::expected<int64_t> restore_shards(cluster_core& core, const std::string& path);

/// local_cluster::scale (cluster_scale.cpp).
caf::expected<int64_t> scale_shards(cluster_core& core, int ps, int workers);

// What local_cluster::scale and task_cluster::scale share (cluster_scale.cpp).
/// invalid_argument "scale: <why>".
caf::error refused(const std::string& why);
/// None when the run may go on at `ps` shards and `workers` workers; else why not (refused).
caf::error check_scale(const cluster_core& core, int ps, int workers);
/// The spec of a run at `ps` shards and `workers` workers from clock `clock` on (each change of
/// a loop's size, replayed in order, gives every worker task the same spec). Throws
/// std::invalid_argument as resized_spec does.
train_spec spec_after(const train_spec& spec, int ps, int workers, int64_t clock);
/// The shards' states at one clock (states_now) cut for `ps` shards and `workers` workers, as
/// a live resize cuts them: the fewest buckets and dense blocks change shard.
struct scaled_states {
  int64_t clock = 0;
  train_spec after;                ///< the run's spec at the new size
  std::vector<wire_buffer> files;  ///< ShardCheckpoint, one per shard of the new size
};
caf::expected<scaled_states> cut_states(cluster_core& core, int ps, int workers);
/// Every shard of the new size (`shards`, in order) takes its part, every worker live at the
/// cut's clock; the first refusal, naming its shard.
caf::error restore_cut(cluster_core& core, const std::vector<ps_shard_actor>& shards,
                       const scaled_states& cut);
/// The core goes on at the spec `after`: its layout, and a new generation, by which each worker
/// client finds the new shards and layout on its next call.
void adopt_spec(cluster_core& core, train_spec after);

/// The client of worker `w`: an actor of core.sys that talks to core.shards.
worker_client make_worker_client(std::shared_ptr<cluster_core> core, int32_t w);

} // namespace actorps::detail
