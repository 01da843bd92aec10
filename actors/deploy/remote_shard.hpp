// A shard in another process, as a worker or the evaluator sees it: a ps_shard_actor handle.
// Control messages go to the shard over CAF's middleman; pulls, push_pulls and snapshots go over
// the shard process's data link (link_socket.hpp) through a local proxy (shard_proxy.hpp), so
// the worker's code is the same as in one process and only the placement differs.
#pragma once

#include "actors/protocol/address.hpp"
#include "actors/link/link_socket.hpp"
#include "actors/tls/tls_files.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/protocol/parameter_destination.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <chrono>
#include <memory>

namespace actorps {

struct remote_shard {
  ps_shard_actor handle;               ///< what the worker or evaluator talks to
  ps_shard_actor shard;                ///< the shard itself, over CAF
  std::shared_ptr<link_socket> link;   ///< null when its process offers no data link
  ps_task_actor task = {};             ///< the ps task it came from (connect_shard only)
  /// Where replies to a worker's pulls and push_pulls are received in place (the worker sets
  /// it: worker_config::destinations); null when there is no data link.
  std::shared_ptr<parameter_destination> destination;
  /// Payloads travel through shared memory (shm_region.hpp); the link carries their headers.
  bool shared_memory = false;
  /// The link is the shard's proven local socket, entered with a ticket taken over TLS.
  bool proven = false;

  /// How pulls and pushes travel: "shared memory", "shared memory, proven over TLS", "local
  /// socket", "tcp", "TLS over local socket", "TLS over tcp", or "caf" (its process offers no
  /// link).
  const char* transport() const {
    if (!link) return "caf";
    if (shared_memory) return proven ? "shared memory, proven over TLS" : "shared memory";
    if (link->is_tls()) return link->is_local() ? "TLS over local socket" : "TLS over tcp";
    return link->is_local() ? "local socket" : "tcp";
  }

  /// Ends the proxy and its connection (a request blocked on it fails at once). Call when the
  /// role using the handle has stopped.
  void close() const;
};

/// The destinations of `shards`, in order (worker_config::destinations).
std::vector<std::shared_ptr<parameter_destination>>
destinations_of(const std::vector<remote_shard>& shards);

/// Introduces itself on `link` (connected to shard `index`'s data link) and wraps it in a proxy
/// that sends pulls, push_pulls and snapshots over it and everything else to `shard`. With `tls`
/// enabled it first runs the TLS handshake with those files and insists that the server's
/// certificate names "ps:<index>". With `shared_memory` (a local socket only) it then offers the
/// shard two fresh memfd rings (shm_region.hpp) and fails if they are refused; over TLS it first
/// takes a ticket and leaves TLS for the shard's proven local socket (link_hub.hpp), where the
/// identity its certificate proved holds without the cipher.
caf::expected<remote_shard> attach_link(caf::actor_system& sys, ps_shard_actor shard,
                                        std::shared_ptr<link_socket> link, int32_t index,
                                        std::chrono::milliseconds request_timeout,
                                        const tls_files& tls = {}, bool shared_memory = false);

/// Connects to the ps task published at `addr` (retrying until `connect_timeout`, as
/// connect_to does), asks it for its shard and where its data link listens, then connects to
/// the data link when the process offers one, introducing itself as a client of shard `index`
/// whose requests time out after `request_timeout`; the path is the process's --data-link
/// (data_link_path.hpp: by default shared memory when the shard's local socket is reachable,
/// else the local socket, else TCP). When `sys` runs TLS (configure_tls) the data link does too,
/// with the same files: over TCP, and on the local socket until its ticket is taken.
caf::expected<remote_shard> connect_shard(caf::actor_system& sys, const host_port& addr,
                                          int32_t index, caf::timespan connect_timeout,
                                          std::chrono::milliseconds request_timeout);

} // namespace actorps
