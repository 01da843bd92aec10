// Strangers on the data link (link_limits.hpp): connections that have not said their hello keep
// no worker out. Under 600 silent connections, opened again as fast as the server closes them,
// a plain worker and a worker with a certificate (TLS) each connect and have a push_pull
// answered, and silent connections are closed at their deadline; a full address or pool makes
// room by closing a stranger that has sent nothing, the oldest first; a TLS client refused by a
// full link hears why inside TLS. The flood comes from 127.0.0.2 to 127.0.0.9 (every 127/8
// address is this host's loopback), as from other hosts; the workers from 127.0.0.1.
#include "link_fixture.hpp"
#include "scratch_dir.hpp"
#include "descriptor_limit.hpp"
#include "silent_flood.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

using namespace actorps;
using namespace actorps::test;

namespace {

using steady = std::chrono::steady_clock;

double seconds_since(steady::time_point t) {
  return std::chrono::duration<double>(steady::now() - t).count();
}

/// True once the peer has closed (or reset) `fd`, false when 20 s passed first.
bool closed_by_peer(int fd) {
  char byte;
  for (;;) {
    auto n = ::recv(fd, &byte, 1, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

/// Still open: nothing to read and no end seen.
bool still_open(int fd) {
  char byte;
  return ::recv(fd, &byte, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

bool shell(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

/// The cluster's certificates (scripts/make_certs.sh) for ps:0 and worker:0, made once.
struct strangers_certificates {
  scratch_dir dir{"actorps_strangers_tls"};
  strangers_certificates() {
    REQUIRE(shell(std::string(ACTORPS_SOURCE_DIR) + "/scripts/make_certs.sh " + dir.path
                  + " ps:0 worker:0"));
  }
  tls_files task(const std::string& stem) const {
    return {dir.path + "/" + stem + ".pem", dir.path + "/" + stem + ".key", dir.path + "/ca.pem"};
  }
};

const strangers_certificates& certs() {
  static strangers_certificates made;
  return made;
}

/// Connects to the fixture's server over TCP from 127.0.0.1 (over TLS with `tls`), says
/// hello and has one push_pull of `clock` answered; the error of the first step that failed.
caf::error worker_served(link_fixture& f, const tls_files& tls, int64_t clock) {
  auto link = connect_link("127.0.0.1", f.server->port(), link_request_timeout);
  if (!link) return std::move(link.error());
  auto remote = attach_link(*f.sys, f.shard, std::move(*link), 0, link_request_timeout, tls);
  if (!remote) return std::move(remote.error());
  caf::error failed;
  (*f.self)->request(remote->handle, timeout, push_pull_atom::value, push_request{f.push_of(0, clock, 1.0f)})
    .receive([](wire_buffer&) {}, [&](caf::error& err) { failed = std::move(err); });
  remote->close();
  return failed;
}

/// The flood's case, over TLS when `tls` is enabled (the worker then has worker:0's certificate).
void served_under_flood(const tls_files& server_tls, const tls_files& worker_tls) {
  test::descriptor_limit fds{4096};
  const link_limits limits;  // the defaults: 512 served, 256 strangers, 32 an address, 5 s
  link_fixture f{tiny_spec(consistency::async, 1), server_tls, limits};
  constexpr int flood_size = 600;
  silent_flood flood{f.server->port(), flood_size, 8};
  // The flood is on: the server has closed as many of its connections as it holds.
  REQUIRE(flood.await_closed(flood_size, std::chrono::seconds(60)));
  // Silent strangers from the worker's own address, to be closed at their deadline.
  std::vector<int> sleepers;
  const auto opened = steady::now();
  for (int i = 0; i < 4; ++i) sleepers.push_back(connect_from("127.0.0.1", f.server->port(), true));
  for (int fd : sleepers) REQUIRE(fd >= 0);

  const auto started = steady::now();
  auto failed = worker_served(f, worker_tls, 0);
  const auto answered_after = seconds_since(started);
  CHECK_MESSAGE(!failed, describe(failed));
  MESSAGE("push_pull answered " << answered_after << " s after the worker began to connect; "
          << flood.closed() << " of the flood's connections closed by the server so far, "
          << f.server->evicted() << " to make room");
  CHECK(answered_after < 20.0);  // under a second when the machine is not loaded
  CHECK(f.server->evicted() > 0);

  for (int fd : sleepers) {
    CHECK(closed_by_peer(fd));
    const auto after = seconds_since(opened);
    // Accepted after connect returned: the deadline cannot pass sooner.
    CHECK(after >= std::chrono::duration<double>(limits.hello_timeout).count());
    CHECK(after < std::chrono::duration<double>(limits.hello_timeout).count() + 15.0);
    ::close(fd);
  }
  // The flood still on, a second worker is served as well.
  CHECK_MESSAGE(!worker_served(f, worker_tls, 1), "the second worker");
}

} // namespace

TEST_CASE("data link strangers: under 600 silent connections opened again as they close, a plain worker is served and the silent are closed at their deadline") {
  served_under_flood({}, {});
}

TEST_CASE("data link strangers: under 600 silent connections opened again as they close, a worker with a certificate is served over TLS") {
  served_under_flood(certs().task("ps-0"), certs().task("worker-0"));
}

TEST_CASE("data link strangers: a full address makes room by closing its oldest silent stranger, a full pool one of the address holding the most") {
  link_limits limits;
  limits.max_strangers_per_address = 3;
  limits.max_strangers = 5;
  limits.hello_timeout = std::chrono::seconds(60);  // only making room closes a stranger here
  link_fixture f{tiny_spec(consistency::async, 1), {}, limits};
  const auto port = f.server->port();
  // The talker has sent half a hello: it is no silent stranger, although the oldest.
  int talker = connect_from("127.0.0.2", port, true);
  REQUIRE(talker >= 0);
  auto hello = make_header(frame_kind::hello, 0, 0, 10000);
  const auto half = sizeof hello / 2;
  REQUIRE(::send(talker, &hello, half, MSG_NOSIGNAL) == ssize_t(half));
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) {
    silent.push_back(connect_from("127.0.0.2", port, true));
    REQUIRE(silent.back() >= 0);
  }
  // The third took the first's place (three of the address are the most it may hold).
  CHECK(closed_by_peer(silent[0]));
  CHECK(f.server->evicted() == 1);
  CHECK(still_open(silent[1]));
  CHECK(still_open(talker));
  // The pool: three of 127.0.0.2, one of 127.0.0.3 and one of 127.0.0.4 fill it; the next
  // connection, from 127.0.0.5, takes the place of 127.0.0.2's oldest silent one.
  int third = connect_from("127.0.0.3", port, true);
  int fourth = connect_from("127.0.0.4", port, true);
  REQUIRE(third >= 0);
  REQUIRE(fourth >= 0);
  int fifth = connect_from("127.0.0.5", port, true);
  REQUIRE(fifth >= 0);
  CHECK(closed_by_peer(silent[1]));
  CHECK(f.server->evicted() == 2);
  for (int fd : {talker, silent[2], third, fourth, fifth}) CHECK(still_open(fd));
  // The talker, spared, says the rest of its hello and is served.
  REQUIRE(::send(talker, reinterpret_cast<char*>(&hello) + half, sizeof hello - half, MSG_NOSIGNAL)
          == ssize_t(sizeof hello - half));
  frame_header h;
  REQUIRE(::recv(talker, &h, sizeof h, MSG_WAITALL) == ssize_t(sizeof h));
  CHECK(h.kind == static_cast<uint16_t>(frame_kind::reply));
  for (int fd : {talker, silent[0], silent[1], silent[2], third, fourth, fifth})
    ::close(fd);
}

TEST_CASE("data link strangers: strangers never keep a worker from a served place") {
  link_limits limits;
  limits.max_connections = 2;
  limits.max_strangers = 2;
  limits.hello_timeout = std::chrono::seconds(60);  // only making room closes a stranger here
  link_fixture f{tiny_spec(consistency::async, 1), {}, limits};
  std::vector<int> strangers;
  for (int i = 0; i < 4; ++i) strangers.push_back(connect_from("127.0.0.2", f.server->port(), true));
  CHECK(closed_by_peer(strangers[0]));  // the pool holds two: the third and fourth made room
  CHECK(closed_by_peer(strangers[1]));
  auto first = f.try_attach(false);
  auto second = f.try_attach(false);
  CHECK_MESSAGE(first, describe(first.error()));
  CHECK_MESSAGE(second, describe(second.error()));
  // Every served place taken: a plain client is told so at once.
  auto third = f.try_attach(false);
  REQUIRE_FALSE(third);
  CHECK(describe(third.error()).find("this shard serves at most 2 data connections")
        != std::string::npos);
  for (auto* remote : {&first, &second})
    if (*remote) (*remote)->close();
  for (int fd : strangers) ::close(fd);
}

TEST_CASE("data link strangers: a TLS client refused by a full link hears why inside TLS") {
  link_limits limits;
  limits.max_connections = 1;
  link_fixture f{tiny_spec(consistency::async, 1), certs().task("ps-0"), limits};
  auto served = f.try_attach(false, 0, certs().task("worker-0"));
  REQUIRE_MESSAGE(served, describe(served.error()));
  auto refused = f.try_attach(false, 0, certs().task("worker-0"));
  REQUIRE_FALSE(refused);
  const auto why = describe(refused.error());
  CHECK_MESSAGE(why.find("this shard serves at most 1 data connections") != std::string::npos, why);
  CHECK_MESSAGE(why.find("wrong version number") == std::string::npos, why);
  served->close();
}
