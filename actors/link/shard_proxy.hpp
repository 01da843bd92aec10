// The local stand-in for a shard behind a data link (remote_shard.hpp): it speaks
// ps_shard_actor, puts pulls, push_pulls and snapshots on the link, and forwards everything else
// to the shard over CAF. A thread of its own reads the answers and hands each to its requester
// (in place, into the worker's parameters, where it has a place: parameter_destination.hpp).
//
// Two kinds, by what a send may cost:
// - Over a socket alone (TCP, a local socket, TLS) the payload goes to the kernel, and a send
//   blocks while the socket is full: the proxy is a detached actor, so the requester never
//   blocks and a worker's sends to its P shards proceed side by side.
// - With shared memory the payload goes into the link's ring (one bounded memcpy) and only a
//   40-byte header on the socket: the send is done in the requester's own thread, as the
//   proxy's enqueue, like CAF's own proxies for remote actors. That saves a thread hand-off
//   (and the wake-up of the proxy's thread) on every request: a round trip between processes
//   is handed between threads one time fewer. A payload that finds the ring full goes inline on
//   the socket and may then block the requester (a worker or the evaluator: detached) for its
//   send.
#pragma once

#include "actors/link/link_socket.hpp"
#include "actors/link/shm_region.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/protocol/parameter_destination.hpp"

#include <caf/actor_system.hpp>

#include <memory>
#include <string>

namespace actorps {

/// A proxy for shard `remote` over `link`; `ring` and `inbox` (both or neither) are the link's
/// shared memory. `where` names the link in errors and log lines. The proxy ends (its link shut
/// down, its reader thread joined) on an exit message or when its last handle goes.
ps_shard_actor spawn_shard_proxy(caf::actor_system& sys, ps_shard_actor remote,
                                 std::shared_ptr<link_socket> link,
                                 std::shared_ptr<parameter_destination> destination,
                                 std::shared_ptr<shm_ring> ring,
                                 std::shared_ptr<const shm_inbox> inbox, std::string where);

} // namespace actorps
