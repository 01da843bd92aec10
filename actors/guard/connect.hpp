// Connecting to a published actor the way a cluster needs it: peers that are not up yet are
// retried with exponential backoff (timers, not sleeps) until a deadline; an actor that speaks
// another message interface is refused at once. Every error names the address.
#pragma once

#include "actors/protocol/address.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/scoped_actor.hpp>

#include <chrono>
#include <set>
#include <string>

namespace actorps {

/// Spawns an actor that, on (connect), connects to the actor published at `addr`, retrying
/// with backoff (50 ms doubling to 1 s) until `timeout` has passed, and answers with the
/// remote actor (strong_actor_ptr) or an error naming `addr`: sec::cannot_connect_to_node, or
/// sec::unexpected_actor_messaging_interface when the actor there is not the one expected (no
/// retry cures that). `expected_ifs` is the message interface the remote actor must have
/// (sys.message_types(...) of the typed handle). With CAF's OpenSSL module loaded in `sys`
/// (tls_config.hpp) the connection is TLS, both ends' certificates verified against the CA.
caf::actor spawn_connector(caf::actor_system& sys, host_port addr,
                           std::set<std::string> expected_ifs, caf::timespan timeout);

/// Blocking form, for a task's main thread: the typed handle or the error.
template <class Handle>
caf::expected<Handle> connect_to(caf::actor_system& sys, const host_port& addr,
                                 caf::timespan timeout) {
  auto ifs = sys.message_types(caf::detail::type_list<Handle>{});
  auto connector = spawn_connector(sys, addr, std::move(ifs), timeout);
  caf::expected<Handle> result{caf::make_error(caf::sec::runtime_error, "no answer")};
  caf::scoped_actor self{sys};
  self->request(connector, timeout + std::chrono::seconds(15), caf::connect_atom::value)
    .receive([&](caf::strong_actor_ptr& ptr) { result = caf::actor_cast<Handle>(std::move(ptr)); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

} // namespace actorps
