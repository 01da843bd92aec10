// Publishing an actor so that every connection refused on its port is reported.
//
// Why this exists: CAF 0.17's BASP broker already closes a connection whose bytes are not BASP,
// but Debian builds CAF with CAF_LOG_LEVEL_QUIET and 0.17 has no hook for it, so a stranger on a
// task's port left no trace. publish_guarded does what middleman::publish does (open an
// acceptor, hand it to the BASP broker together with the actor and its message interface),
// except that each accepted connection first shows its opening BASP message to us.
#pragma once

#include "actors/guard/caf_port_limits.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <cstdint>
#include <functional>
#include <set>
#include <string>

namespace actorps {

/// Told of each connection CAF refused: the peer ("ip:port") and why, in words. Called in CAF's
/// network thread, so it must be quick and must not block.
using refusal_handler = std::function<void(const std::string& peer, const std::string& why)>;

/// Publishes `whom` (with the message interface `sigs`, as `remote_actor` will check it) on
/// `host`:`port` (port 0: one the OS picks; an empty host: every address) with SO_REUSEADDR,
/// as `middleman().publish(whom, port, host, true)` does, and returns the bound port or the
/// error publish would give. A peer whose first message is not a BASP client handshake, or
/// whose handshake CAF refuses, is disconnected by CAF as before and reported to
/// `on_refused`; every other connection goes on untouched. The port is held to `limits`
/// (caf_port_limits.hpp): a connection over the limit, one whose handshake is late and one
/// whose peer leaves its replies unread are closed and reported too. `on_refused` is
/// rate-limited (rate_limited_log.hpp).
caf::expected<uint16_t> publish_guarded(caf::actor_system& sys, caf::strong_actor_ptr whom,
                                        std::set<std::string> sigs, const std::string& host,
                                        uint16_t port, refusal_handler on_refused,
                                        const caf_port_limits& limits = {});

/// The same for an actor handle, with the interface CAF's publish would announce for it.
template <class Handle>
caf::expected<uint16_t> publish_guarded(caf::actor_system& sys, const Handle& whom,
                                        const std::string& host, uint16_t port,
                                        refusal_handler on_refused,
                                        const caf_port_limits& limits = {}) {
  return publish_guarded(sys, caf::actor_cast<caf::strong_actor_ptr>(whom),
                         sys.message_types(whom), host, port, std::move(on_refused), limits);
}

} // namespace actorps
