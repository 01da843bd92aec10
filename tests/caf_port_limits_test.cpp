// The bounds of a CAF port published with publish_guarded (caf_port_limits.hpp): a connection
// whose handshake is late is closed at its deadline, one whose handshake is pending makes room
// for a newer one on a full port (600 silent connections keep no peer out), the connection over
// a port full of peers is closed at once, and a client that does not read its replies is cut
// off while the published actor goes on serving others. Each one reported with the peer's
// address.
#include "guarded_server.hpp"
#include "descriptor_limit.hpp"
#include "silent_flood.hpp"

using namespace actorps;
using namespace actorps::test;

namespace {

/// Answers each request with `reply_bytes` bytes: replies a non-reader leaves to pile up.
using blob_actor = caf::typed_actor<caf::replies_to<int32_t>::with<std::vector<char>>>;

constexpr std::size_t reply_bytes = std::size_t(512) << 10;

blob_actor::behavior_type blob_server() {
  return {[](int32_t) { return std::vector<char>(reply_bytes, 'x'); }};
}

/// The adder's answer to `x` (0 when it gives none).
int32_t ask(caf::actor_system& sys, const adder_actor& remote, int32_t x) {
  caf::scoped_actor self{sys};
  int32_t answer = 0;
  self->request(remote, bound, x).receive([&](int32_t y) { answer = y; },
                                          [&](caf::error& err) { FAIL(sys.render(err)); });
  return answer;
}

std::string address_of(const raw_socket& s) { return "127.0.0.1:" + std::to_string(s.local_port()); }

} // namespace

TEST_CASE("a CAF port closes a connection whose handshake is not through by its deadline") {
  caf_port_limits limits;
  limits.handshake_timeout = std::chrono::milliseconds(1000);
  guarded_server<> server{limits};
  // A real peer, connected first: its handshake is through long before its deadline, which
  // passes before the stranger's.
  caf::actor_system_config cfg;
  caf::actor_system client{with_network(cfg)};
  auto remote = client.middleman().remote_actor<adder_actor>("127.0.0.1", server.port);
  REQUIRE_MESSAGE(remote, client.render(remote.error()));
  raw_socket trickle;
  REQUIRE(trickle.connect(server.port));
  REQUIRE(trickle.send_all({'\x00'}));  // the first byte of a BASP header, and no more
  CHECK(trickle.closed_by_peer());
  auto refused = server.next_refusal();
  REQUIRE_MESSAGE(refused, "no report of the closed connection");
  CHECK(refused->peer == address_of(trickle));
  CHECK(refused->why == "its TLS and BASP handshake was not through within 1 s: closed");
  CHECK(ask(client, *remote, 1) == 2);
  CHECK(server.no_refusal_pending());
}

TEST_CASE("a CAF port makes room for a peer by closing a connection whose handshake is pending, and refuses one only when all are through") {
  caf_port_limits limits;
  limits.max_connections = 2;
  guarded_server<> server{limits};
  caf::actor_system_config cfg;
  caf::actor_system client{with_network(cfg)};
  auto remote = client.middleman().remote_actor<adder_actor>("127.0.0.1", server.port);
  REQUIRE_MESSAGE(remote, client.render(remote.error()));
  CHECK(ask(client, *remote, 1) == 2);  // its handshake is through at the server by now
  raw_socket held;  // the second connection, its handshake pending
  REQUIRE(held.connect(server.port));
  // A real peer on the full port: the pending connection makes room for it.
  caf::actor_system_config second_cfg;
  caf::actor_system second{with_network(second_cfg)};
  auto other = second.middleman().remote_actor<adder_actor>("127.0.0.1", server.port);
  REQUIRE_MESSAGE(other, second.render(other.error()));
  CHECK(held.closed_by_peer());
  auto evicted = server.next_refusal();
  REQUIRE_MESSAGE(evicted, "no report of the connection closed to make room");
  CHECK(evicted->peer == address_of(held));
  CHECK(evicted->why == "its handshake was not through, and its place went to a newer connection"
                        " (the port held 2 connections, its limit)");
  CHECK(ask(second, *other, 2) == 3);
  // Every connection through: the one over the limit is refused at once.
  raw_socket third;
  REQUIRE(third.connect(server.port));
  CHECK(third.closed_by_peer());
  auto refused = server.next_refusal();
  REQUIRE_MESSAGE(refused, "no report of the refused connection");
  CHECK(refused->peer == address_of(third));
  CHECK(refused->why == "the port already holds 2 connections (its limit): refused at once");
  CHECK(ask(client, *remote, 3) == 4);
  CHECK(server.no_refusal_pending());
}

TEST_CASE("a CAF port serves a peer under 600 silent connections opened again as they close") {
  test::descriptor_limit fds{4096};
  guarded_server<> server;  // the default limits: 512 connections, 32 pending from an address
  silent_flood flood{server.port, 600, 8};  // from 127.0.0.2 to 127.0.0.9
  REQUIRE(flood.await_closed(600, std::chrono::seconds(60)));  // the port is full
  const auto started = std::chrono::steady_clock::now();
  check_remote_peer_is_served(server.port);  // from 127.0.0.1
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  MESSAGE("a peer served " << took.count() << " s after it began to connect; "
          << flood.closed() << " of the flood's connections closed by the server so far");
  CHECK(took.count() < 20.0);  // under a second when the machine is not loaded
}

TEST_CASE("a CAF port disconnects a client that does not read its replies and serves others") {
  guarded_server<blob_actor> server{{}, [](caf::actor_system& sys) { return sys.spawn(blob_server); }};
  stalling_relay non_reader{server.port};
  REQUIRE(non_reader.port() != 0);
  caf::actor_system_config cfg;
  caf::actor_system client{with_network(cfg)};
  auto remote = client.middleman().remote_actor<blob_actor>("127.0.0.1", non_reader.port());
  REQUIRE_MESSAGE(remote, client.render(remote.error()));
  caf::scoped_actor self{client};
  std::size_t got = 0;
  self->request(*remote, bound, int32_t{0})
    .receive([&](std::vector<char>& reply) { got = reply.size(); },
             [&](caf::error& err) { FAIL(client.render(err)); });
  REQUIRE(got == reply_bytes);
  // From now on its replies stay at the server: 200 of them are 100 MiB, far more than the
  // kernel's buffers on both ends hold.
  REQUIRE(non_reader.stop_replies());
  for (int32_t i = 1; i <= 200; ++i) self->send(*remote, i);
  auto refused = server.next_refusal();
  REQUIRE_MESSAGE(refused, "no report of the non-reading client");
  CHECK(refused->why.find("it does not read its replies: closed (17 messages queued")
        == 0);
  // A client that reads is served meanwhile.
  caf::actor_system_config other_cfg;
  caf::actor_system other{with_network(other_cfg)};
  auto direct = other.middleman().remote_actor<blob_actor>("127.0.0.1", server.port);
  REQUIRE_MESSAGE(direct, other.render(direct.error()));
  caf::scoped_actor asker{other};
  got = 0;
  asker->request(*direct, bound, int32_t{1})
    .receive([&](std::vector<char>& reply) { got = reply.size(); },
             [&](caf::error& err) { FAIL(other.render(err)); });
  CHECK(got == reply_bytes);
}
