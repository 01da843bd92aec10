// The host actor of a worker or evaluator process in a distributed run. It joins the chief; when
// the chief sends the setup it loads its data, connects to every shard directly (retrying with
// backoff up to the connect timeout) and spawns the role — the same worker or evaluator actor
// that `simulate` spawns. Spawned detached: loading data and connecting block only its thread.
#pragma once

#include "actors/tls/tls_files.hpp"
#include "actors/protocol/messages.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <string>

namespace actorps {

struct task_node_config {
  std::string name;                          ///< "worker:1", for log lines
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(60)};
  /// The task's TLS files. Its CAF connections and its data links to the shards use them
  /// through the actor system's config (configure_tls, connect_shard).
  tls_files tls;
};

task_node_actor spawn_task_node(caf::actor_system& sys, task_node_config cfg);

} // namespace actorps
