// The actor a ps process publishes on its address in a distributed run (deployment.hpp). A
// worker or evaluator connecting to the process asks it for the shard the process hosts and
// where the process's data link listens (remote_shard.hpp): placement is deployment's
// knowledge, so the shard itself keeps to the algorithm. It stops when the shard does, with
// the shard's reason, taking the published address with it. Without a chief (a loop of the
// user's own) it also counts the workers that said done and stops the shard after the last,
// and ps:0 is where the workers meet to change the numbers of shards and workers
// (task_cluster::scale), and where a worker task beyond the job waits to be taken in.
// With --replicas 1 the chief has it spawn standbys of other tasks' shards (standby): they live
// as long as the task, in its process. Before it answers, the task dials its standby's primary's
// task directly, so that the replication between the two travels on a connection of their own:
// otherwise CAF relays it through the chief's node, which over mutual TLS relays nothing
// (basp_origin.hpp), and which it would load with every replicated push anyway.
#pragma once

#include "actors/protocol/address.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/roles/ps_shard.hpp"

#include <caf/actor_system.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

struct ps_task_config {
  ps_shard_actor shard;       ///< the shard this process hosts
  uint16_t link_port = 0;     ///< the data link's TCP port; 0: none (everything over CAF)
  std::string link_name;      ///< the data link's local socket; "": none (TCP only)
  /// A loop of the user's own: the shard stops (normally) once workers 0..finish_after-1 have
  /// each said done. 0: the chief of a runtime-owned run stops it.
  int32_t finish_after = 0;
  /// Of those, the workers in the job from the start (0..training-1; 0: all): ps:0 keeps the
  /// job's workers, which a change of workers grows or shrinks; those beyond wait there to be
  /// taken in (task_cluster::worker).
  int32_t training = 0;
  int32_t index = 0;          ///< this task's index: ps:<index>
  /// What a standby spawned here (--replicas 1, the chief asks) takes from this process.
  shard_config standby_config = {};
  /// Every ps task's CAF address (the cluster spec's, by index): a standby's host dials its
  /// primary's task there first. Empty: nothing is dialled (one process, or a loop of the
  /// user's own, where no standby lives).
  std::vector<host_port> ps_addresses = {};
  /// How long that dial may take (a task still starting is retried with backoff, connect.hpp).
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(60)};
  /// Counts the messages this task refused as not authorised (its shard reports them); null:
  /// they are only logged.
  std::shared_ptr<std::atomic<uint64_t>> refusals = nullptr;
};

ps_task_actor spawn_ps_task(caf::actor_system& sys, ps_task_config cfg);

} // namespace actorps
