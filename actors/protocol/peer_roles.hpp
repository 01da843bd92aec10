// Who sent a message: the task named by the verified certificate of the connection it came in
// on (mutual TLS, tls_scribe.hpp), for authorisation by role (actors/roles/authorisation.hpp).
//
// CAF 0.17 tells a handler only the sender's node id. Each TLS connection, once its BASP
// handshake is through, binds the peer's node id to its certificate's CN here, and unbinds it
// when it closes; the connection itself makes sure that every message it delivers comes from
// that node (basp_origin.hpp). A node id carries no authority of its own: a second connection
// claiming a bound node id with another certificate is refused.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/fwd.hpp>
#include <caf/node_id.hpp>

#include <cstdint>
#include <string>

namespace actorps {

/// The sender of a message as authorisation sees it.
struct sender_role {
  enum class kind_t {
    local,    ///< an actor of this actor system (or no sender: only local code sends anonymously)
    open,     ///< a remote node of a system without TLS: no identity, everything as before
    task,     ///< a remote node whose certificate names a task: `type`:`index`
    unknown,  ///< a remote node of a TLS system with no valid task certificate bound
  };
  kind_t kind = kind_t::local;
  std::string type;    ///< "chief", "ps", "worker", "evaluator" (kind task)
  int32_t index = -1;  ///< the task's index (kind task)
  std::string name;    ///< for messages: "worker:1", "this process", "a peer without TLS", ...

  bool is(const std::string& t, int32_t i) const {
    return kind == kind_t::task && type == t && index == i;
  }
  /// Local or open: a sender that passes every rule (the run as before authorisation).
  bool unrestricted() const { return kind == kind_t::local || kind == kind_t::open; }
};

/// Binds the remote node `peer`, as seen from the local node `here`, to the CN of its
/// connection's certificate; false (nothing bound) when `peer` is bound to another CN already.
/// Each successful bind is undone by one unbind_peer. Thread-safe.
bool bind_peer(const caf::node_id& here, const caf::node_id& peer, const std::string& cn);

/// Undoes one bind_peer (the connection closed). Once the last connection of `peer` has closed
/// its CN is still the one bound_cn names, for the messages those connections delivered that
/// wait in a mailbox, until a new connection binds `peer` (to any CN). Thread-safe.
void unbind_peer(const caf::node_id& here, const caf::node_id& peer);

/// The CN bound to `peer` as seen from `here`, or the last one bound once its connections have
/// closed; "" when none ever was.
std::string bound_cn(const caf::node_id& here, const caf::node_id& peer);

/// The role of `sender` for an actor of `sys`: local for its own node and for no sender, open
/// when `sys` has no TLS, else the task its connection's certificate names (unknown when the
/// CN names none: "worker:1" parses, "alice" does not). Thread-safe.
sender_role role_of(const caf::strong_actor_ptr& sender, const caf::actor_system& sys);

/// "worker:1" → {task, "worker", 1}; anything else → unknown, named `cn`.
sender_role role_from_cn(const std::string& cn);

} // namespace actorps
