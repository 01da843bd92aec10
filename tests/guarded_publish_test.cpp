// publish_guarded: a stranger on the port is disconnected and reported once with its address,
// real CAF peers still connect, a malformed handshake is reported too, a busy port is refused
// as CAF's publish refuses it.
#include "actors/net/guarded_publish.hpp"
#include "actors/protocol/system_config.hpp"

#include <caf/all.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp/header.hpp>
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

using namespace actorps;

namespace {

using adder_actor = caf::typed_actor<caf::replies_to<int32_t>::with<int32_t>>;

adder_actor::behavior_type adder() {
  return {[](int32_t x) { return x + 1; }};
}

constexpr auto bound = std::chrono::seconds(10);  // every wait below ends by then

/// A plain TCP socket on 127.0.0.1, closed on scope exit; reads give up after `bound`.
class raw_socket {
public:
  raw_socket() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    timeval tv{static_cast<time_t>(bound.count()), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~raw_socket() { ::close(fd_); }
  raw_socket(const raw_socket&) = delete;
  raw_socket& operator=(const raw_socket&) = delete;

  bool connect(uint16_t port) {
    auto addr = loopback(port);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  /// Binds an OS-chosen port and listens on it; returns the port (0 on failure).
  uint16_t listen() {
    auto addr = loopback(0);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 1) != 0)
      return 0;
    return local_port();
  }
  uint16_t local_port() const {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    return ntohs(addr.sin_port);
  }
  bool send_all(const std::vector<char>& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL)
           == static_cast<ssize_t>(bytes.size());
  }
  /// Reads (and drops: the server's handshake) until the peer closes: true, or until `bound`
  /// passes without that: false.
  bool closed_by_peer() {
    char buf[4096];
    for (;;) {
      auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
      if (n < 0 && errno != EINTR) return false;  // EAGAIN: the timeout
    }
  }

private:
  static sockaddr_in loopback(uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
  }
  int fd_;
};

caf::actor_system_config& with_network(caf::actor_system_config& cfg) {
  configure_system(cfg, 2, network_settings{});
  return cfg;
}

/// A refusal as on_refused reported it.
struct refusal {
  std::string peer;
  std::string why;
};

/// An actor system with the middleman and an adder published with publish_guarded on
/// 127.0.0.1, whose refusals arrive in `inbox` as (peer, why) messages.
struct guarded_server {
  caf::actor_system_config cfg;
  caf::actor_system sys{with_network(cfg)};
  caf::scoped_actor inbox{sys};
  adder_actor published = sys.spawn(adder);
  uint16_t port = 0;

  guarded_server() {
    // A weak reference: the network layer keeps the handler, and must not keep `inbox` alive.
    auto to = caf::actor_cast<caf::weak_actor_ptr>(inbox->ctrl());
    auto bound_port = publish_guarded(sys, published, "127.0.0.1", 0,
                                      [to](const std::string& peer, const std::string& why) {
                                        if (auto dest = caf::actor_cast<caf::actor>(to.lock()))
                                          caf::anon_send(dest, peer, why);
                                      });
    REQUIRE(bound_port);
    port = *bound_port;
  }

  ~guarded_server() {
    sys.middleman().unpublish(published, port);
    caf::anon_send_exit(published, caf::exit_reason::user_shutdown);
  }

  /// The next refusal, or none within `bound`.
  std::optional<refusal> next_refusal() {
    std::optional<refusal> got;
    inbox->receive([&](std::string& peer, std::string& why) { got = refusal{peer, why}; },
                   caf::after(bound) >> [] {});
    return got;
  }

  /// True if no refusal is waiting now.
  bool no_refusal_pending() {
    bool none = true;
    inbox->receive([&](std::string&, std::string&) { none = false; },
                   caf::after(std::chrono::seconds(0)) >> [] {});
    return none;
  }
};

/// A stranger connects to `server` and sends `bytes`: the server must report it once, naming
/// the stranger's port, and disconnect it. Returns why it was refused.
std::string refusal_of_stranger(guarded_server& server, const std::vector<char>& bytes) {
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

/// A request to the adder through a real remote_actor from a second actor system.
void check_remote_peer_is_served(uint16_t port) {
  caf::actor_system_config cfg;
  caf::actor_system client{with_network(cfg)};
  auto remote = client.middleman().remote_actor<adder_actor>("127.0.0.1", port);
  REQUIRE_MESSAGE(remote, client.render(remote.error()));
  {
    caf::scoped_actor self{client};
    int32_t answer = 0;
    self->request(*remote, bound, int32_t{41})
      .receive([&](int32_t x) { answer = x; },
               [&](caf::error& err) { FAIL("the request failed: " << client.render(err)); });
    CHECK(answer == 42);
  }
  // Leaving closes the connection; the server drops what it kept for this peer.
}

} // namespace

TEST_CASE("publish_guarded reports a stranger sending garbage once and disconnects it") {
  guarded_server server;
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
  guarded_server server;
  // A heartbeat: valid BASP, but no CAF peer sends one before its handshake.
  caf::io::basp::header heartbeat{caf::io::basp::message_type::heartbeat, 0, 0, 0, 0, 0};
  auto why = refusal_of_stranger(server, basp_bytes(server.sys, heartbeat));
  CHECK(why.find("not a CAF peer") != std::string::npos);
}

TEST_CASE("publish_guarded reports a client handshake whose payload is malformed") {
  guarded_server server;
  caf::io::basp::header handshake{caf::io::basp::message_type::client_handshake, 0, 4, 0, 0, 0};
  auto bytes = basp_bytes(server.sys, handshake, {'\xde', '\xad', '\xbe', '\xef'});  // no node id
  CHECK(refusal_of_stranger(server, bytes) == "its BASP handshake was malformed");
}

TEST_CASE("publish_guarded refuses a port in use as CAF's publish does") {
  guarded_server server;
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
