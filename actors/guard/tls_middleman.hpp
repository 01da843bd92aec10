// Dialling over TLS with our own scribe and session (tls_session.hpp) instead of CAF's OpenSSL
// module's. It is CAF's middleman actor with only `connect` replaced, so remote_actor's
// handshake, caching and interface check stay CAF's own.
#pragma once

#include "actors/guard/tls_scribe.hpp"

#include <caf/actor_system.hpp>
#include <caf/io/middleman_actor.hpp>

namespace actorps {

/// Spawns a middleman actor whose connections are TLS (the system must have CAF's OpenSSL module
/// loaded, tls_config.hpp); `on_failure` hears why a handshake failed (the peer refused our
/// certificate, or we its). Stop it with an exit message when done: the connections it made
/// belong to the BASP broker and outlive it.
caf::io::middleman_actor spawn_tls_middleman(caf::actor_system& sys,
                                             handshake_failure_handler on_failure);

} // namespace actorps
