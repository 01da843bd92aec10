// For the tests of publish_guarded: a plain TCP socket playing a stranger, and an actor system
// with an actor published with publish_guarded on 127.0.0.1 whose refusals arrive as messages.
#pragma once

#include "actors/guard/guarded_publish.hpp"
#include "actors/protocol/system_config.hpp"
#include "apps/bench/stalling_relay.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace actorps::test {

using adder_actor = caf::typed_actor<caf::replies_to<int32_t>::with<int32_t>>;

inline adder_actor::behavior_type adder() {
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
  ~raw_socket() { close(); }
  raw_socket(const raw_socket&) = delete;
  raw_socket& operator=(const raw_socket&) = delete;

  bool connect(uint16_t port) {
    auto addr = loopback_address(port);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  /// Binds an OS-chosen port and listens on it; returns the port (0 on failure).
  uint16_t listen() {
    auto addr = loopback_address(0);
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
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }

private:
  int fd_;
};

inline caf::actor_system_config& with_network(caf::actor_system_config& cfg) {
  configure_system(cfg, 2, network_settings{});
  return cfg;
}

/// A refusal as on_refused reported it.
struct refusal {
  std::string peer;
  std::string why;
};

/// An actor system with the middleman and an actor (by default an adder) published with
/// publish_guarded on 127.0.0.1 under `limits`, whose refusals arrive in `inbox` as (peer,
/// why) messages.
template <class Handle = adder_actor>
struct guarded_server {
  caf::actor_system_config cfg;
  caf::actor_system sys{with_network(cfg)};
  caf::scoped_actor inbox{sys};
  Handle published;
  uint16_t port = 0;

  explicit guarded_server(const caf_port_limits& limits = {},
                          const std::function<Handle(caf::actor_system&)>& spawn = nullptr)
    : published(spawn ? spawn(sys) : spawn_adder(sys)) {
    // A weak reference: the network layer keeps the handler, and must not keep `inbox` alive.
    auto to = caf::actor_cast<caf::weak_actor_ptr>(inbox->ctrl());
    auto bound_port = publish_guarded(sys, published, "127.0.0.1", 0,
                                      [to](const std::string& peer, const std::string& why) {
                                        if (auto dest = caf::actor_cast<caf::actor>(to.lock()))
                                          caf::anon_send(dest, peer, why);
                                      },
                                      limits);
    REQUIRE(bound_port);
    port = *bound_port;
  }

  ~guarded_server() {
    sys.middleman().unpublish(published, port);
    caf::anon_send_exit(published, caf::exit_reason::user_shutdown);
  }

  static Handle spawn_adder(caf::actor_system& sys) {
    if constexpr (std::is_same<Handle, adder_actor>::value) return sys.spawn(adder);
    else return Handle{};  // none: the caller passes `spawn`
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

/// A request to the adder on `port` through a real remote_actor from a second actor system.
inline void check_remote_peer_is_served(uint16_t port) {
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

} // namespace actorps::test
