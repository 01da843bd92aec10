// The data link over mutual TLS (tls_stream.hpp on the server, tls_channel.hpp under link_socket
// on the client, link_authorisation.hpp): a client without a certificate, with a self-signed one,
// with one of another CA, or not speaking TLS at all is refused before any frame is read, and
// each refusal is logged with its address and OpenSSL's reason; a client of the cluster's CA is
// then served the shard's own bytes. A certified worker cannot push or pull as another worker,
// the evaluator only takes snapshots, and a client refuses a server that is not the ps task it
// meant.
#include "actors/protocol/errors.hpp"
#include "every_shard_signature.hpp"
#include "link_fixture.hpp"
#include "scratch_dir.hpp"
#include "tls_test_client.hpp"

#include <doctest/doctest.h>

#include <cstdlib>

using namespace actorps;
using namespace actorps::test;

namespace {

bool shell(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

/// The cluster's certificates (scripts/make_certs.sh), a worker:0 of another CA, and a
/// self-signed worker:0; made once for every test here.
struct link_certificates {
  scratch_dir dir{"actorps_link_tls"};
  std::string cluster = dir.path + "/cluster";
  link_certificates() {
    auto script = std::string(ACTORPS_SOURCE_DIR) + "/scripts/make_certs.sh ";
    REQUIRE(shell(script + cluster + " ps:0 ps:1 worker:0 worker:1 evaluator:0"));
    REQUIRE(shell(script + dir.path + "/other worker:0"));
    REQUIRE(shell("openssl req -x509 -nodes -days 1 -newkey ec -pkeyopt ec_paramgen_curve:P-256"
                  " -subj /CN=worker:0 -keyout " + dir.path + "/self.key -out " + dir.path
                  + "/self.pem"));
  }
  /// A task of the cluster: "worker-0" for worker:0.
  tls_files task(const std::string& file_stem) const {
    return {cluster + "/" + file_stem + ".pem", cluster + "/" + file_stem + ".key",
            cluster + "/ca.pem"};
  }
  tls_files other_ca() const {
    return {dir.path + "/other/worker-0.pem", dir.path + "/other/worker-0.key", cluster + "/ca.pem"};
  }
  tls_files self_signed() const {
    return {dir.path + "/self.pem", dir.path + "/self.key", cluster + "/ca.pem"};
  }
};

const link_certificates& certs() {
  static link_certificates made;
  return made;
}

/// A shard served by a TLS data link server with `server_identity`'s files ("ps-0").
struct tls_link_fixture : link_fixture {
  explicit tls_link_fixture(train_spec s, const std::string& server_identity = "ps-0",
                            link_limits limits = {}, shard_config config = {})
    : link_fixture(std::move(s), certs().task(server_identity), limits, std::move(config)) {}
  /// Attaches over TCP or the local socket with `files` (none: plain).
  caf::expected<remote_shard> attach(const tls_files& files, bool local = false) {
    return try_attach(local, 0, files);
  }
};

/// A client without a certificate (tls_test_client.hpp) that sends a hello frame.
std::pair<uint16_t, bool> client_without_certificate(uint16_t port) {
  auto hello = make_header(frame_kind::hello, 0, 0, 10000);
  return tls_client_without_certificate(port, certs().task("ps-0").ca, &hello, sizeof hello);
}

} // namespace

TEST_CASE("data link over TLS: clients without a certificate of the cluster's CA, or without TLS, are refused and logged, and a certified one gets the shard's own bytes") {
  auto spec = tiny_spec(consistency::async, 1);
  tls_link_fixture link{spec};
  shard_fixture direct{spec};
  const std::string refused_from = "refused a data connection from 127.0.0.1:";

  auto [port, answered] = client_without_certificate(link.server->port());
  CHECK_FALSE(answered);
  auto line = link.next_log_line();
  CHECK(line.find(refused_from + std::to_string(port) + ": TLS handshake failed: ") == 0);
  CHECK(line.find("certificate") != std::string::npos);  // "peer did not return a certificate"

  struct attacker {
    const char* what;
    tls_files files;
    const char* reason;  // in the server's log line
  };
  for (const auto& a : {attacker{"self-signed", certs().self_signed(), "certificate"},
                        attacker{"another CA's", certs().other_ca(), "certificate"},
                        attacker{"plain", tls_files{}, "TLS handshake failed"}}) {
    CAPTURE(a.what);
    auto refused = link.attach(a.files);
    CHECK_FALSE(refused);
    line = link.next_log_line();
    CHECK(line.find(refused_from) == 0);
    CHECK(line.find("TLS handshake failed: ") != std::string::npos);
    CHECK(line.find(a.reason) != std::string::npos);
  }
  CHECK(link.server->refused() == 4);
  CHECK(link.stats().pushes == 0);

  for (bool local : {false, true}) {
    CAPTURE(local);
    auto remote = link.attach(certs().task("worker-0"), local);
    REQUIRE(remote);
    CHECK(remote->transport() == std::string(local ? "TLS over local socket" : "TLS over tcp"));
    auto pulled = link.ask(remote->handle, pull_atom::value, int32_t{0}, int64_t{0});
    auto expected = direct.ask(direct.shard, pull_atom::value, int32_t{0}, int64_t{0});
    REQUIRE(pulled);
    REQUIRE(expected);
    CHECK(same_bytes(*pulled, *expected));
    check_pushes_as_in_process(link, remote->handle, direct, local ? 3 : 0, 3);
    auto snap = link.ask(remote->handle, snapshot_atom::value);
    REQUIRE(snap);
    CHECK(link.parameters_of(*snap) == direct.snapshot());
    remote->close();
  }
  CHECK(link.server->refused() == 4);
}

TEST_CASE("data link over TLS: a worker's certificate cannot push or pull as another worker, the evaluator's only takes snapshots, state unchanged") {
  auto spec = tiny_spec(consistency::async, 2);
  tls_link_fixture link{spec};
  shard_fixture twin{spec};  // gets only what worker 0 may send
  auto before = link.snapshot();
  auto worker0 = link.attach(certs().task("worker-0"));
  REQUIRE(worker0);
  auto is_not_authorised = [](const caf::expected<wire_buffer>& r) {
    return !r && r.error().category() == error_category
           && r.error().code() == static_cast<uint8_t>(errc::not_authorised);
  };

  auto as_other = link.ask(worker0->handle, push_pull_atom::value, push_request{link.push_of(1, 0, 1.0f)});
  CHECK(is_not_authorised(as_other));
  if (!as_other) CHECK(describe(as_other.error()).find("may not push_pull as worker 1") != std::string::npos);
  auto line = link.next_log_line();
  CHECK(line.find("refused a data request from 127.0.0.1:") == 0);
  CHECK(line.find("(worker:0)") != std::string::npos);
  CHECK(is_not_authorised(link.ask(worker0->handle, pull_atom::value, int32_t{1}, int64_t{0})));

  auto evaluator = link.attach(certs().task("evaluator-0"));
  REQUIRE(evaluator);
  CHECK(is_not_authorised(link.ask(evaluator->handle, push_pull_atom::value, push_request{link.push_of(0, 0, 1.0f)})));
  CHECK(is_not_authorised(link.ask(evaluator->handle, pull_atom::value, int32_t{0}, int64_t{0})));
  auto snap = link.ask(evaluator->handle, snapshot_atom::value);
  REQUIRE(snap);
  CHECK(link.parameters_of(*snap) == before);  // nothing refused was applied

  CHECK(link.server->unauthorised() == 4);
  auto stats = link.stats();
  CHECK(stats.pushes == 0);
  CHECK(stats.dropped == 0);  // refused before the shard saw them

  // Its own pushes and pulls go through, on the same connection.
  auto own = link.ask(worker0->handle, push_pull_atom::value, push_request{link.push_of(0, 0, 1.0f)});
  auto expected = twin.ask(twin.shard, push_pull_atom::value, push_request{twin.push_of(0, 0, 1.0f)});
  REQUIRE(own);
  REQUIRE(expected);
  CHECK(same_bytes(*own, *expected));
  CHECK(link.parameters_of(*own) != before);
  CHECK(link.ask(worker0->handle, pull_atom::value, int32_t{0}, int64_t{1}));
  CHECK(link.server->unauthorised() == 4);
  worker0->close();
  evaluator->close();
}

TEST_CASE("data link over TLS: a client refuses a server of the cluster's CA that is not the ps task it meant") {
  tls_link_fixture link{tiny_spec(consistency::async, 1), "ps-1"};  // serves index 0 as ps:1
  auto refused = link.attach(certs().task("worker-0"));
  REQUIRE_FALSE(refused);
  CHECK(describe(refused.error()).find("the server's certificate names \"ps:1\", not ps:0")
        != std::string::npos);
  CHECK(link.stats().pushes == 0);
}

TEST_CASE("data link over TLS: the hello timeout covers the handshake, a client that never finishes it is disconnected") {
  link_limits limits;
  limits.hello_timeout = std::chrono::milliseconds(300);
  tls_link_fixture link{tiny_spec(consistency::async, 1), "ps-0", limits};
  int fd = stranger_to(link.server->port());
  // A TLS record header announcing a ClientHello of 512 bytes that never come.
  const unsigned char partial[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01};
  REQUIRE(::send(fd, partial, sizeof partial, MSG_NOSIGNAL) == sizeof partial);
  auto line = link.next_log_line();
  CHECK(line.find("refused a data connection from 127.0.0.1:") == 0);
  CHECK(line.find("no hello within 300 ms") != std::string::npos);
  char byte;
  CHECK(::recv(fd, &byte, 1, 0) <= 0);  // disconnected
  ::close(fd);
  CHECK(link.server->refused() == 1);
  // A certified client is served afterwards.
  auto remote = link.attach(certs().task("worker-0"));
  REQUIRE(remote);
  CHECK(link.ask(remote->handle, push_pull_atom::value, push_request{link.push_of(0, 0, 1.0f)}));
  remote->close();
}

TEST_CASE("data link over TLS: a push sent in two runs is applied as it arrives, and one its certificate may not make is refused whole") {
  const auto spec = parted_spec();
  tls_link_fixture link{spec, "ps-0", small_runs()};
  shard_fixture direct{spec};
  auto tls_link = [&](const std::string& identity) {
    auto link_socket = connect_link("127.0.0.1", link.server->port(), link_request_timeout);
    REQUIRE(link_socket);
    auto& raw = **link_socket;
    REQUIRE_FALSE(raw.start_tls(certs().task(identity), "ps:0", link_request_timeout));
    say_hello(raw);
    return *link_socket;
  };
  auto worker = tls_link("worker-0");
  check_two_runs_as_direct(*worker, link, direct);
  const auto expected = link.snapshot();
  // worker:1 pushing as worker 0: not handed on early; refused once whole, and counted once.
  auto other = tls_link("worker-1");
  const auto push = wire_push(link.layout, 1, 0.5f);
  const auto half = half_of(push);
  send_first(*other, 9, push, half);
  send_rest(*other, push, half);
  frame_header h;
  REQUIRE_FALSE(other->receive_header(h));
  REQUIRE(kind_of(h.kind) == frame_kind::failure);
  caf::error carried;
  REQUIRE_FALSE(other->receive_failure(h, carried));
  CHECK(carried == make_error(errc::not_authorised));
  CHECK(link.server->unauthorised() == 1);
  CHECK(link.stats().pushes_streamed == 1);
  CHECK(link.snapshot() == expected);
}

TEST_CASE("data link over TLS: every signature of the shard answers through worker 0's proxy as the shard's own") {
  const auto expected = asked_of_the_shard_itself(word_aligned_spec());
  REQUIRE(expected.size() == lines_asked);
  for (bool local : {false, true}) {
    CAPTURE(local);
    scratch_dir dir;
    tls_link_fixture link{word_aligned_spec(), "ps-0", {}, checkpoints_into(dir.path)};
    auto worker0 = link.attach(certs().task("worker-0"), local);
    REQUIRE(worker0);
    CHECK(std::string(worker0->transport()).find("TLS over") == 0);
    auto got = ask_every_signature(link, worker0->handle, dir.path);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == expected[i]);
  }
}

namespace {

/// A TLS connection to the fixture's local socket (TCP with `over_tcp`) as `identity` that has
/// said hello and asked for a local ticket: the answer's frame header, and its bytes when a reply.
std::pair<frame_header, std::vector<unsigned char>>
ask_ticket(tls_link_fixture& link, const std::string& identity, bool over_tcp = false) {
  auto s = over_tcp ? connect_link("127.0.0.1", link.server->port(), link_request_timeout)
                    : connect_local_link(link.server->local_name());
  REQUIRE(s);
  auto& raw = **s;
  REQUIRE_FALSE(raw.start_tls(certs().task(identity), "ps:0", link_request_timeout));
  say_hello(raw);
  REQUIRE_FALSE(raw.send(make_header(frame_kind::local_ticket, 5)));
  frame_header h;
  REQUIRE_FALSE(raw.receive_header(h));
  std::vector<unsigned char> bytes;
  if (kind_of(h.kind) == frame_kind::reply) {
    auto got = raw.receive_buffer(h);
    REQUIRE(got);
    bytes.assign(got->bytes(), got->bytes() + got->size_bytes());
  }
  raw.shutdown();
  return {h, bytes};
}

/// Says hello on the fixture's proven local socket with `ticket` (its first local_ticket_secret
/// bytes; none when empty): the answer's kind, and the plain connection.
std::pair<frame_kind, std::shared_ptr<link_socket>>
hello_on_proven(tls_link_fixture& link, const std::vector<unsigned char>& ticket) {
  auto s = connect_local_link(link.server->proven_name());
  REQUIRE(s);
  auto& raw = **s;
  raw.set_receive_timeout(link_request_timeout);
  REQUIRE_FALSE(raw.send(make_header(frame_kind::hello, 0, 0, 10000,
                                     ticket.empty() ? 0 : local_ticket_secret),
                         ticket.empty() ? nullptr : ticket.data()));
  frame_header h;
  REQUIRE_FALSE(raw.receive_header(h));
  return {kind_of(h.kind), *s};
}

} // namespace

TEST_CASE("data link over TLS: a local client leaves the cipher for shared memory with a ticket taken over TLS, its certificate's rules hold there, and a hello without a live ticket is refused and counted") {
  auto spec = tiny_spec(consistency::async, 2);
  tls_link_fixture link{spec};
  shard_fixture direct{spec};
  REQUIRE_FALSE(link.server->proven_name().empty());
  REQUIRE(link.server->proven_name() != link.server->local_name());

  // worker:0's certificate, on the local socket with shared memory asked for.
  auto local = connect_local_link(link.server->local_name());
  REQUIRE(local);
  auto worker0 = attach_link(*link.sys, link.shard, std::move(*local), 0, link_request_timeout,
                             certs().task("worker-0"), true);
  if (!worker0) FAIL(describe(worker0.error()));
  CHECK(worker0->transport() == std::string("shared memory, proven over TLS"));
  CHECK_FALSE(worker0->link->is_tls());
  check_pushes_as_in_process(link, worker0->handle, direct, 0, 3);
  auto pulled = link.ask(worker0->handle, pull_atom::value, int32_t{0}, int64_t{0});
  auto expected = direct.ask(direct.shard, pull_atom::value, int32_t{0}, int64_t{0});
  REQUIRE(pulled);
  REQUIRE(expected);
  CHECK(same_bytes(*pulled, *expected));
  // The identity the certificate proved holds on the plain socket: not worker 1's pushes.
  const auto before = link.snapshot();
  auto as_other = link.ask(worker0->handle, push_pull_atom::value, push_request{link.push_of(1, 3, 1.0f)});
  REQUIRE_FALSE(as_other);
  CHECK(as_other.error() == make_error(errc::not_authorised));
  CHECK(link.server->unauthorised() == 1);
  CHECK(link.next_log_line().find("refused a data request from a local socket (worker:0): ") == 0);
  CHECK(link.snapshot() == before);
  CHECK(link.server->refused() == 0);

  // A peer of this host without the secret: no ticket, a guessed one, a used one, all refused.
  auto [no_ticket, plain1] = hello_on_proven(link, {});
  CHECK(no_ticket == frame_kind::failure);
  auto line = link.next_log_line();
  CHECK(line.find("refused a data connection from a local socket: a hello on the proven local "
                  "socket without a live ticket") == 0);
  auto [guessed, plain2] = hello_on_proven(link, std::vector<unsigned char>(local_ticket_secret, 7));
  CHECK(guessed == frame_kind::failure);
  CHECK(link.server->unproven() == 2);
  CHECK(link.server->refused() == 2);

  // worker:1 takes a ticket over TLS: it works once, as worker:1.
  auto [h, ticket] = ask_ticket(link, "worker-1");
  REQUIRE(kind_of(h.kind) == frame_kind::reply);
  REQUIRE(ticket.size() == local_ticket_bytes);
  CHECK(std::string(reinterpret_cast<const char*>(ticket.data()) + local_ticket_secret)
        == link.server->proven_name());
  auto [first, proven] = hello_on_proven(link, ticket);
  CHECK(first == frame_kind::reply);
  auto [again, replayed] = hello_on_proven(link, ticket);
  CHECK(again == frame_kind::failure);
  CHECK(link.server->unproven() == 3);
  // The proven connection is worker:1's: worker 0's pull is refused, its own answered.
  proven->set_receive_timeout(link_request_timeout);
  REQUIRE_FALSE(proven->send(make_header(frame_kind::pull, 11, 0, 0)));
  REQUIRE_FALSE(proven->receive_header(h));
  CHECK(kind_of(h.kind) == frame_kind::failure);
  caf::error carried;
  REQUIRE_FALSE(proven->receive_failure(h, carried));
  CHECK(carried == make_error(errc::not_authorised));
  CHECK(link.server->unauthorised() == 2);
  REQUIRE_FALSE(proven->send(make_header(frame_kind::pull, 12, 1, 0)));
  REQUIRE_FALSE(proven->receive_header(h));
  CHECK(kind_of(h.kind) == frame_kind::reply);
  CHECK(h.id == 12);

  // Over TCP no ticket is given: it is of no use off this host.
  auto [over_tcp, none] = ask_ticket(link, "worker-1", true);
  CHECK(kind_of(over_tcp.kind) == frame_kind::failure);
  CHECK(none.empty());
  CHECK(link.stats().pushes == 3);
  worker0->close();
}

TEST_CASE("data link over TLS: requests read ahead past the connection's bound wait in the session and are all answered") {
  // A burst of pulls in one go: the session reads records ahead of the frames the hub takes,
  // and the hub stops at its bound of requests in flight; those still held by OpenSSL, which
  // the socket no longer reports, must be read once answers free their place.
  link_limits limits;
  limits.max_requests_per_connection = 4;
  tls_link_fixture link{tiny_spec(consistency::async, 1), "ps-0", limits};
  auto s = connect_link("127.0.0.1", link.server->port(), link_request_timeout);
  REQUIRE(s);
  auto& raw = **s;
  REQUIRE_FALSE(raw.start_tls(certs().task("worker-0"), "ps:0", link_request_timeout));
  say_hello(raw);
  constexpr int burst = 40;
  for (int i = 0; i < burst; ++i)  // a record each
    REQUIRE_FALSE(raw.send(make_header(frame_kind::pull, 100 + i, 0, 0)));
  for (int i = 0; i < burst; ++i) {
    frame_header h;
    REQUIRE_FALSE(raw.receive_header(h));
    REQUIRE(kind_of(h.kind) == frame_kind::reply);
    CHECK(h.id == uint64_t(100 + i));
    REQUIRE(raw.receive_buffer(h));
  }
  CHECK(link.server->refused() == 0);
}
