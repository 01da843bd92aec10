// A distributed run: one role per process, connected by CAF's middleman.
//
// Every task publishes its actor on its own address from the cluster spec (a ps its ps task,
// which hands out the shard and says where the data link listens; a worker or the evaluator
// its task node), connects to the chief (retrying with backoff up to
// the connect timeout) and joins it. The chief publishes itself, waits for every task, then
// trains exactly as `simulate` does. When training ends the chief stops every task and they
// exit 0; when the chief is lost (down message or heartbeat timeout) every task stops and exits
// non-zero saying why.
#pragma once

#include "actors/chief/chief.hpp"
#include "actors/deploy/cluster_spec.hpp"
#include "actors/deploy/ps_task.hpp"
#include "actors/link/shard_link_server.hpp"
#include "actors/tls/tls_files.hpp"
#include "actors/protocol/system_config.hpp"
#include "actors/roles/ps_shard.hpp"

#include <caf/expected.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace actorps {

struct deployment_options {
  cluster_spec cluster;
  task_id task;
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(60)};
  /// Listen on this address of the host ("0.0.0.0", "::") instead of the host the spec names
  /// (peers still dial the spec's names); "": the spec's host, once it resolves.
  std::string bind;
  /// A ps task's data-link port (data_port.hpp): 0 for the task's own port + 1.
  int data_port = 0;
  /// Serve /metrics on this port of the task's listening address (metrics_endpoint.hpp); 0: not.
  uint16_t prometheus_port = 0;
  network_settings network;
  int scheduler_threads = 0;
  /// A ps task's shard: its checkpoint root (the task's own --checkpoint-dir) and value bounds,
  /// from its own command line, never from a message.
  shard_config shard;
  /// This task's TLS identity (checked already); not enabled: no TLS, and a loud warning. It
  /// covers every CAF connection and every data link (a ps task's server, a worker's or the
  /// evaluator's client: remote_shard.hpp takes the files from the actor system's config).
  tls_files tls;
};

/// Configures the actor system of a ps, worker or evaluator task: scheduler threads, the
/// middleman, heartbeats and peer timeouts, every message type, and TLS when `opts.tls` is on.
void configure_task_system(caf::actor_system_config& cfg, const deployment_options& opts);

/// Runs a ps, worker or evaluator task in `sys` (configured by configure_task_system) until the
/// chief stops it, and returns the task's exit status (exit_codes.hpp): 0 the chief ended a
/// completed run; 138 (retryable) the chief was lost or unreachable, stopped the run early, or
/// failed the run in a way a restart may cure; 1 its role failed, the chief refused it, or the
/// run failed in a way a restart would repeat (as the chief exits); 2 the task could not start
/// (e.g. its port is in use).
///
/// Afterwards `sys` may hold references that a departed peer never releases, so destroying it
/// can wait forever (CAF 0.17); apps/cluster_commands.cpp ends the process without doing so.
int run_task(caf::actor_system& sys, const deployment_options& opts);

/// A ps task's shard, its ps task and its data link server.
struct hosted_shard {
  ps_shard_actor shard;
  ps_task_actor task;
  std::unique_ptr<shard_link_server> links;  // listens as long as this lives
};

/// Spawns shard `index` and its ps task, with the data link listening on `data_port` (0: one
/// the OS picks) of the task's own host address, or of `bind` when given (the ps task tells
/// clients which port, remote_shard.hpp). `tls`: the task's TLS files: with them the data link
/// speaks mutual TLS too (shard_link_server.hpp), without them it is plain, as CAF's side is.
/// `connect_timeout`: how long a standby spawned here may take to reach its primary's task.
/// The shard's counters count the messages its data link and its ps task refused as not
/// authorised among its own (refused_unauthorised).
caf::expected<hosted_shard> host_shard(caf::actor_system& sys, const cluster_spec& cluster,
                                       int32_t index, int32_t finish_after,
                                       int32_t training = 0,
                                       const std::string& bind = {}, uint16_t data_port = 0,
                                       shard_config shard_cfg = {}, const tls_files& tls = {},
                                       std::chrono::milliseconds connect_timeout =
                                         std::chrono::seconds(60));

/// Hosts shard `index` of a loop of the user's own (ps.hpp's task_cluster): publishes its ps
/// task on the cluster's address for ps:index and returns once every worker of the cluster has
/// said done (0), or 2 when the task cannot listen there. `training`: the workers in the job
/// from the start (0: all; ps_task_config::training). The same CAF 0.17 caveat as run_task.
int serve_shard_of_own_loop(caf::actor_system& sys, const cluster_spec& cluster, int32_t index,
                            int32_t training = 0);

/// Asks the running chief to stop early and cleanly (`why`: the signal, "SIGTERM"): after the
/// next checkpoint when checkpoints are on, with the summary, every task told the run was
/// interrupted. Callable from any thread; does nothing once the run is over.
using stop_request = std::function<void(const std::string& why)>;

/// Runs the chief task: publishes the chief, waits up to the connect timeout for every task to
/// join, trains, and stops every task. Returns the summary (stopped_by set when a stop request
/// ended it early) or the error that ended the run. `on_start`, when given, receives the
/// run's stop_request once the chief exists.
caf::expected<run_summary> run_chief_task(const deployment_options& opts, chief_config cfg,
                                          const std::function<void(stop_request)>& on_start = {});

} // namespace actorps
