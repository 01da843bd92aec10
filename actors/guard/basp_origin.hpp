// Every BASP message of a TLS connection comes from the node whose handshake opened it.
//
// Why: authorisation by role (peer_roles.hpp) trusts a message's sender node, and CAF 0.17.6
// takes a routed, monitor or down message's source node from the message itself. A peer with a
// valid worker certificate could otherwise send a routed message "from" the chief's node, a
// second handshake that renames its connection, or an anonymous request that no role check
// can attribute. And an exit message cannot be checked where it lands: CAF 0.17.6 ends an actor
// on exit_reason::kill whatever its exit handler says, so only chief:0's certificate may send
// one (the chief stops and, for fault injection, kills the tasks' actors). This check sees each read of the connection (the broker reads a header, then
// its payload when it has one) before CAF does, and spoils what must not pass so that CAF
// itself closes the connection, with its own bookkeeping.
#pragma once

#include <caf/fwd.hpp>
#include <caf/io/basp/message_type.hpp>
#include <caf/node_id.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace actorps {

class basp_origin {
public:
  /// Asked once, with the node id the peer's handshake names: false refuses the connection
  /// (the node id is bound to another certificate).
  using binder = std::function<bool(const caf::node_id& peer)>;

  /// Inspects `n` bytes at the front of `bytes` (what the broker reads next: a header, or the
  /// payload of the header before) for the node `here`. Returns "" to let them pass, or why the
  /// connection is refused: the bytes are then spoiled (CAF finds the header or payload
  /// malformed and closes the connection) and everything after passes unchecked.
  /// `may_stop`: the peer may send exit messages (its certificate names chief:0).
  std::string inspect(caf::execution_unit* ctx, std::vector<char>& bytes, std::size_t n,
                      const caf::node_id& here, const binder& bind, bool may_stop);

  /// The node the handshake named; none before it.
  const caf::node_id& peer() const { return peer_; }

  /// Refusals of all connections of the process so far (a counter for tests and logs).
  static uint64_t refusals();

private:
  std::string inspect_header(caf::execution_unit* ctx, std::vector<char>& bytes, std::size_t n);
  std::string inspect_payload(caf::execution_unit* ctx, std::vector<char>& bytes, std::size_t n,
                              const caf::node_id& here, const binder& bind, bool may_stop);
  std::string inspect_content(caf::binary_deserializer& source, bool may_stop);

  caf::node_id peer_;
  caf::io::basp::message_type operation_ = caf::io::basp::message_type::heartbeat;
  bool payload_next_ = false;  // the last header announced a payload: the next read is it
  bool done_ = false;          // refused, or left to CAF to refuse: nothing more to check
  std::string type_name_;     // the last message's type name, kept so that its capacity is
                              // reused: no allocation per message
};

} // namespace actorps
