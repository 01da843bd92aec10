// publish_guarded: a stranger on the port is disconnected and reported once with its address,
// real CAF peers still connect, a malformed handshake is reported too, a busy port is refused
// as CAF's publish refuses it.
#include "guarded_server.hpp"

#include <caf/binary_serializer.hpp>
#include <caf/io/basp/header.hpp>

#include <initializer_list>
#include <string>
#include <vector>

using namespace actorps;
using namespace actorps::test;

namespace {

/// A stranger connects to `server` and sends `bytes`: the server must report it once, naming
/// the stranger's port, and disconnect it. Returns why it was refused.
std::string refusal_of_stranger(guarded_server<>& server, const std::vector<char>& bytes) {
  raw_socket stranger;
  REQUIRE(stranger.connect(server.port));
  REQUIRE(stranger.send_all(bytes));
  auto refused = server.next_refusal();
  REQUIRE_MESSAGE(refused, "no refusal reported");
  CHECK(refused->peer == "127.0.0.1:" + std::to_string(stranger.local_port()));
  CHECK(stranger.closed_by_peer());
  return refused->why;
}

/// A BASP header as CAF itself writes one, followed by `payload`.
std::vector<char> basp_bytes(caf::actor_system& sys, caf::io::basp::header hdr,
                             std::initializer_list<char> payload = {}) {
  std::vector<char> bytes;
  caf::binary_serializer sink{sys, bytes};
  REQUIRE(!sink(hdr));
  REQUIRE(bytes.size() == caf::io::basp::header_size);
  bytes.insert(bytes.end(), payload);
  return bytes;
}

} // namespace

TEST_CASE("publish_guarded reports a stranger sending garbage once and disconnects it") {
  guarded_server<> server;
  std::vector<char> garbage(4096, '\xff');
  garbage[0] = 'G';  // not the byte of any BASP operation either way
  auto why = refusal_of_stranger(server, garbage);
  CHECK(why.find("not a CAF peer") != std::string::npos);
  CHECK(why.find("47 ff ff") != std::string::npos);  // the leading bytes, in hex
  // A real peer after the stranger is served; its handshake went through before the reply,
  // so a refusal of it (or a second one of the stranger) would be in the inbox by now.
  check_remote_peer_is_served(server.port);
  CHECK(server.no_refusal_pending());
}

TEST_CASE("publish_guarded reports a well-formed BASP header that is no handshake") {
  guarded_server<> server;
  // A heartbeat: valid BASP, but no CAF peer sends one before its handshake.
  caf::io::basp::header heartbeat{caf::io::basp::message_type::heartbeat, 0, 0, 0, 0, 0};
  auto why = refusal_of_stranger(server, basp_bytes(server.sys, heartbeat));
  CHECK(why.find("not a CAF peer") != std::string::npos);
}

TEST_CASE("publish_guarded reports a client handshake whose payload is malformed") {
  guarded_server<> server;
  caf::io::basp::header handshake{caf::io::basp::message_type::client_handshake, 0, 4, 0, 0, 0};
  auto bytes = basp_bytes(server.sys, handshake, {'\xde', '\xad', '\xbe', '\xef'});  // no node id
  CHECK(refusal_of_stranger(server, bytes) == "its BASP handshake was malformed");
}

TEST_CASE("publish_guarded refuses a port in use as CAF's publish does") {
  guarded_server<> server;
  raw_socket holder;
  auto busy = holder.listen();
  REQUIRE(busy != 0);
  auto guarded = publish_guarded(server.sys, server.published, "127.0.0.1", busy,
                                 [](const std::string&, const std::string&) {});
  REQUIRE(!guarded);
  auto plain = server.sys.middleman().publish(server.published, busy, "127.0.0.1", true);
  REQUIRE(!plain);
  CHECK(server.sys.render(guarded.error()) == server.sys.render(plain.error()));
}
