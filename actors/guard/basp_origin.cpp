#include "actors/guard/basp_origin.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/message_id.hpp>
#include <caf/type_nr.hpp>

#include <algorithm>
#include <atomic>

namespace actorps {

namespace {

namespace basp = caf::io::basp;

std::atomic<uint64_t> refused{0};

/// Makes a header invalid (an operation that does not exist) or a payload unreadable (its first
/// field, a node id, of an implementation that does not exist): CAF closes the connection.
void spoil(std::vector<char>& bytes, std::size_t n) {
  std::fill_n(bytes.begin(), std::min<std::size_t>(n, 8), static_cast<char>(0xff));
}

std::string text(const caf::node_id& node) { return caf::to_string(node); }

/// The type name CAF 0.17 serializes in front of a message holding one exit_msg ("@<>+@exit").
const std::string& exit_message_name() {
  static const std::string name =
    std::string("@<>+") + caf::numbered_type_names[caf::type_nr<caf::exit_msg>::value - 1];
  return name;
}

} // namespace

uint64_t basp_origin::refusals() { return refused.load(); }

std::string basp_origin::inspect(caf::execution_unit* ctx, std::vector<char>& bytes,
                                 std::size_t n, const caf::node_id& here, const binder& bind,
                                 bool may_stop) {
  if (done_ || n == 0 || bytes.size() < n) return "";
  auto payload = payload_next_;
  payload_next_ = false;
  auto why = payload ? inspect_payload(ctx, bytes, n, here, bind, may_stop)
                     : inspect_header(ctx, bytes, n);
  if (!why.empty()) {
    done_ = true;
    spoil(bytes, n);
    ++refused;
  }
  return why;
}

std::string basp_origin::inspect_header(caf::execution_unit* ctx, std::vector<char>& bytes,
                                        std::size_t n) {
  basp::header hdr;
  caf::binary_deserializer source{ctx, bytes.data(), n};
  if (n != basp::header_size || source(hdr) || !basp::valid(hdr)) {
    done_ = true;  // CAF closes a connection on a malformed header itself
    return "";
  }
  const bool first = peer_ == caf::none;
  if (first && !basp::is_handshake(hdr)) {
    done_ = true;  // CAF refuses a first message that is no handshake (guarded_publish.cpp)
    return "";
  }
  if (hdr.operation == basp::message_type::direct_message && hdr.source_actor == 0
      && !caf::make_message_id(hdr.operation_data).is_response())
    return "an anonymous message (no sender to authorise)";
  operation_ = hdr.operation;
  payload_next_ = hdr.payload_len > 0;
  return "";
}

std::string basp_origin::inspect_payload(caf::execution_unit* ctx, std::vector<char>& bytes,
                                         std::size_t n, const caf::node_id& here,
                                         const binder& bind, bool may_stop) {
  using op = basp::message_type;
  caf::binary_deserializer source{ctx, bytes.data(), n};
  caf::node_id from;
  caf::node_id to;
  if (operation_ == op::server_handshake || operation_ == op::client_handshake) {
    // The payload begins with the node id the peer claims (server and client handshake alike).
    if (source(from) || from == caf::none) {
      done_ = true;  // CAF refuses a handshake it cannot read
      return "";
    }
    // CAF repeats a client handshake at times (it drops one for a node it knows): harmless as
    // long as it names the same node, a new name for the connection otherwise.
    if (peer_ != caf::none)
      return from == peer_ ? "" : "a second handshake naming node " + text(from)
                                    + " (its first named " + text(peer_) + ")";
    if (!bind(from)) return "its handshake names node " + text(from)
                            + ", which another certificate's connection holds";
    peer_ = from;
    return "";
  }
  const bool routed = operation_ == op::routed_message;
  if (!routed && operation_ != op::monitor_message && operation_ != op::down_message
      && operation_ != op::direct_message)
    return "";
  if (operation_ != op::direct_message) {  // a direct one comes from the connection's node
    if (source(from, to)) {
      done_ = true;  // CAF closes on an unreadable payload itself
      return "";
    }
    if (from != peer_)
      return "a " + caf::io::basp::to_string(operation_) + " claiming to come from node "
             + text(from) + " (its handshake named " + text(peer_) + ")";
    if (to != here)
      return "a " + caf::io::basp::to_string(operation_) + " for node " + text(to)
             + " (this node relays nothing)";
    if (!routed) return "";
  }
  return inspect_content(source, may_stop);
}

std::string basp_origin::inspect_content(caf::binary_deserializer& source, bool may_stop) {
  // A direct or routed message's payload continues with its forwarding stack, then the message
  // (a type name, then its values). actorps sends no forwarding stack; one would hide the name.
  std::size_t stages = 0;
  uint16_t type = 0;
  if (source.begin_sequence(stages)) {
    done_ = true;  // CAF closes on an unreadable payload itself
    return "";
  }
  if (stages != 0) return "a message with a forwarding stack (actorps sends none)";
  if (source.begin_object(type, type_name_)) {
    done_ = true;
    return "";
  }
  if (type == 0 && type_name_ == exit_message_name() && !may_stop)
    return "an exit message (only chief:0 may stop a task's actors)";
  return "";
}

} // namespace actorps
