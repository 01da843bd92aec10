// The data link over mutual TLS (tls_stream.hpp on the server, tls_channel.hpp under link_socket
// on the client, link_authorisation.hpp): a client without a certificate, with a self-signed one,
// with one of another CA, or not speaking TLS at all is refused before any frame is read, and
// each refusal is logged with its address and OpenSSL's reason; a client of the cluster's CA is
// then served the shard's own bytes. A certified worker cannot push or pull as another worker,
// the evaluator only takes snapshots, and a client refuses a server that is not the ps task it
// meant.
#include "actors/net/remote_shard.hpp"
#include "actors/net/shard_link_server.hpp"
#include "actors/protocol/errors.hpp"
#include "scratch_dir.hpp"
#include "shard_fixture.hpp"

#include <doctest/doctest.h>

#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

using namespace actorps;
using namespace actorps::test;

namespace {

using line_atom = caf::atom_constant<caf::atom("line")>;

constexpr auto request_timeout = std::chrono::milliseconds(10000);

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

/// A shard served by a TLS data link server with `server_identity`'s files; its log lines go to
/// the fixture's scoped actor.
struct tls_link_fixture : shard_fixture {
  std::unique_ptr<shard_link_server> server;

  explicit tls_link_fixture(train_spec s, const std::string& server_identity = "ps-0")
    : shard_fixture(std::move(s)) {
    caf::actor me = caf::actor_cast<caf::actor>(*self);
    auto listening = shard_link_server::listen(
      "127.0.0.1", 0, [me](const std::string& line) { caf::anon_send(me, line_atom::value, line); },
      {}, certs().task(server_identity));
    REQUIRE(listening);
    server = std::move(*listening);
    server->serve(*sys, shard, 0);
  }
  ~tls_link_fixture() { server.reset(); }

  /// Attaches over TCP or the local socket with `files` (none: plain).
  caf::expected<remote_shard> attach(const tls_files& files, bool local = false) {
    auto link = local ? connect_local_link(server->local_name())
                      : connect_link("127.0.0.1", server->port(), request_timeout);
    REQUIRE(link);
    return attach_link(*sys, shard, std::move(*link), 0, request_timeout, files);
  }

  template <class... Ts>
  caf::expected<wire_buffer> ask(const ps_shard_actor& to, Ts&&... xs) {
    caf::expected<wire_buffer> out{caf::none};
    (*self)->request(to, timeout, std::forward<Ts>(xs)...)
      .receive([&](wire_buffer& reply) { out = std::move(reply); },
               [&](caf::error& err) { out = std::move(err); });
    return out;
  }

  std::string next_log_line() {
    std::string line;
    (*self)->receive([&](line_atom, std::string& l) { line = std::move(l); },
                     caf::after(timeout) >> [] {});
    return line;
  }
};

bool same_bytes(const wire_buffer& a, const wire_buffer& b) {
  return a.size_bytes() == b.size_bytes() && std::memcmp(a.bytes(), b.bytes(), a.size_bytes()) == 0;
}

/// An OpenSSL client with no certificate, trusting the cluster's CA: it completes its side of
/// the handshake (TLS 1.3 ends there before the server has checked it), sends a hello frame and
/// tries to read the answer. Returns its local port and whether it read anything (it must not).
std::pair<uint16_t, bool> client_without_certificate(uint16_t port) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  REQUIRE(ctx);
  REQUIRE(SSL_CTX_load_verify_locations(ctx, certs().task("ps-0").ca.c_str(), nullptr) == 1);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  sockaddr_in own{};
  socklen_t len = sizeof own;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&own), &len);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  bool answered = false;
  if (SSL_connect(ssl) == 1) {
    auto hello = make_header(frame_kind::hello, 0, 0, 10000);
    SSL_write(ssl, &hello, sizeof hello);
    frame_header h;
    answered = SSL_read(ssl, &h, sizeof h) > 0;
  }
  SSL_free(ssl);
  ::close(fd);
  SSL_CTX_free(ctx);
  return {ntohs(own.sin_port), answered};
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
    auto expected = link.ask(direct.shard, pull_atom::value, int32_t{0}, int64_t{0});
    REQUIRE(pulled);
    REQUIRE(expected);
    CHECK(same_bytes(*pulled, *expected));
    for (int64_t clock = 0; clock < 3; ++clock) {
      auto step = (local ? 3 : 0) + clock;
      auto via_link = link.ask(remote->handle, push_pull_atom::value,
                               link.push_of(0, step, 0.25f * float(step + 1)));
      auto in_process = link.ask(direct.shard, push_pull_atom::value,
                                 direct.push_of(0, step, 0.25f * float(step + 1)));
      REQUIRE(via_link);
      REQUIRE(in_process);
      CHECK(same_bytes(*via_link, *in_process));
    }
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

  auto as_other = link.ask(worker0->handle, push_pull_atom::value, link.push_of(1, 0, 1.0f));
  CHECK(is_not_authorised(as_other));
  if (!as_other) CHECK(describe(as_other.error()).find("may not push as worker 1") != std::string::npos);
  auto line = link.next_log_line();
  CHECK(line.find("refused a data request from 127.0.0.1:") == 0);
  CHECK(line.find("(worker:0)") != std::string::npos);
  CHECK(is_not_authorised(link.ask(worker0->handle, pull_atom::value, int32_t{1}, int64_t{0})));

  auto evaluator = link.attach(certs().task("evaluator-0"));
  REQUIRE(evaluator);
  CHECK(is_not_authorised(link.ask(evaluator->handle, push_pull_atom::value, link.push_of(0, 0, 1.0f))));
  CHECK(is_not_authorised(link.ask(evaluator->handle, pull_atom::value, int32_t{0}, int64_t{0})));
  auto snap = link.ask(evaluator->handle, snapshot_atom::value);
  REQUIRE(snap);
  CHECK(link.parameters_of(*snap) == before);  // nothing refused was applied

  CHECK(link.server->unauthorised() == 4);
  auto stats = link.stats();
  CHECK(stats.pushes == 0);
  CHECK(stats.dropped == 0);  // refused before the shard saw them

  // Its own pushes and pulls go through, on the same connection.
  auto own = link.ask(worker0->handle, push_pull_atom::value, link.push_of(0, 0, 1.0f));
  auto expected = link.ask(twin.shard, push_pull_atom::value, twin.push_of(0, 0, 1.0f));
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
