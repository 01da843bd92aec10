// A TCP relay on 127.0.0.1 between one client and a server: the client's bytes always go
// through, the server's until stop_replies(), after which the relay reads nothing more from the
// server, as a client that never reads its replies would. For the test and the attack tool of
// the CAF port's bound on unread replies (caf_port_limits.hpp).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace actorps {

/// 127.0.0.1:`port`.
inline sockaddr_in loopback_address(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

class stalling_relay {
public:
  explicit stalling_relay(uint16_t server_port) : server_port_(server_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto addr = loopback_address(0);
    socklen_t len = sizeof addr;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0
        || ::listen(listener_, 1) != 0 || ::pipe(wake_) != 0
        || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~stalling_relay() {
    if (thread_.joinable()) {
      char quit = 'q';
      if (::write(wake_[1], &quit, 1) == 1) thread_.join();
      else thread_.detach();
    }
    for (int fd : {listener_, wake_[0], wake_[1]})
      if (fd >= 0) ::close(fd);
  }
  stalling_relay(const stalling_relay&) = delete;
  stalling_relay& operator=(const stalling_relay&) = delete;

  /// The port a client connects to; 0 when the relay could not listen.
  uint16_t port() const { return port_; }

  /// From now on the server's bytes stay at the server.
  bool stop_replies() {
    replies_ = false;
    char stop = 's';
    return ::write(wake_[1], &stop, 1) == 1;
  }

private:
  static bool forward(int from, int to) {
    char buf[64 << 10];
    auto n = ::recv(from, buf, sizeof buf, 0);
    return n > 0 && ::send(to, buf, static_cast<size_t>(n), MSG_NOSIGNAL) == n;
  }

  void run() {
    pollfd first[2] = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    if (::poll(first, 2, -1) <= 0 || first[0].revents) return;
    int client = ::accept(listener_, nullptr, nullptr);
    int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto addr = loopback_address(server_port_);
    if (client >= 0 && server >= 0
        && ::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      for (;;) {
        short from_server = replies_ ? POLLIN : 0;
        pollfd fds[3] = {{wake_[0], POLLIN, 0}, {client, POLLIN, 0}, {server, from_server, 0}};
        if (::poll(fds, 3, -1) < 0) break;
        if (fds[0].revents) {
          char c = 0;
          if (::read(wake_[0], &c, 1) != 1 || c == 'q') break;
          continue;  // replies_ changed
        }
        if (fds[1].revents && !forward(client, server)) break;
        if (fds[2].revents & (POLLERR | POLLHUP)) break;  // the server closed the connection
        if (fds[2].revents && replies_ && !forward(server, client)) break;
      }
    }
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
  }

  uint16_t server_port_;
  uint16_t port_ = 0;
  int listener_ = -1;
  int wake_[2] = {-1, -1};
  std::atomic<bool> replies_{true};
  std::thread thread_;
};

} // namespace actorps
