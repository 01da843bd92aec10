// A flood of silent TCP connections for the tests of strangers on a server's port: each from an
// address of 127/8 other than 127.0.0.1 (all of them this host's loopback), as from other hosts,
// never sending a byte, opened again as soon as the server closes it.
#pragma once

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace actorps::test {

/// A TCP socket from `source` (an address of 127/8) to 127.0.0.1:`port`, its connect started
/// (non-blocking) or done (blocking, receives giving up after 20 s); -1 when it failed.
inline int connect_from(const std::string& source, uint16_t port, bool blocking) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (blocking ? 0 : SOCK_NONBLOCK), 0);
  if (fd < 0) return -1;
  int one = 1;  // the port is chosen at connect, per destination: a flood does not run out
  ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0
      || (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// `count` connections to 127.0.0.1:`port` that never send a byte, from 127.0.0.2 to
/// 127.0.0.(1 + addresses) in turn, each opened again as soon as the server closes it, on a
/// thread of their own until destroyed.
class silent_flood {
public:
  silent_flood(uint16_t port, int count, int addresses)
    : port_(port), addresses_(addresses), wake_(::eventfd(0, EFD_CLOEXEC)) {
    REQUIRE(wake_ >= 0);
    for (int i = 0; i < count; ++i) polled_.push_back({open_one(i), POLLOUT, 0});
    polled_.push_back({wake_, POLLIN, 0});
    thread_ = std::thread([this] { run(); });
  }
  ~silent_flood() {
    stopping_ = true;
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_, &one, sizeof one);
    thread_.join();
    for (auto& p : polled_)
      if (p.fd >= 0) ::close(p.fd);
  }

  /// Waits until the server has closed at least `n` of them (false after `bound`).
  bool await_closed(std::size_t n, std::chrono::seconds bound) {
    std::unique_lock<std::mutex> lock{mutex_};
    return changed_.wait_for(lock, bound, [&] { return closed_ >= n; });
  }
  std::size_t closed() const {
    std::lock_guard<std::mutex> lock{mutex_};
    return closed_;
  }

private:
  std::string source(int i) const { return "127.0.0." + std::to_string(2 + i % addresses_); }
  int open_one(int i) { return connect_from(source(i), port_, false); }

  void run() {
    const int count = static_cast<int>(polled_.size()) - 1;
    while (!stopping_) {
      if (::poll(polled_.data(), polled_.size(), -1) < 0 && errno != EINTR) return;
      std::size_t ended = 0;
      for (int i = 0; i < count; ++i) {
        auto& p = polled_[i];
        if (p.revents == 0 && p.fd >= 0) continue;
        if (p.fd >= 0 && p.events == POLLOUT && !(p.revents & (POLLERR | POLLHUP))) {
          p.events = POLLIN;  // connected: from now on, waits for the server to close it
          continue;
        }
        char bytes[4096];  // what the server says first (CAF's handshake) is read and dropped
        if (p.fd >= 0 && !(p.revents & (POLLERR | POLLHUP))
            && ::recv(p.fd, bytes, sizeof bytes, MSG_DONTWAIT) > 0)
          continue;
        if (p.fd >= 0) ::close(p.fd);
        ++ended;
        p.fd = open_one(i);
        p.events = POLLOUT;
      }
      if (ended > 0) {
        std::lock_guard<std::mutex> lock{mutex_};
        closed_ += ended;
        changed_.notify_all();
      }
    }
  }

  uint16_t port_;
  int addresses_;
  int wake_;
  std::vector<pollfd> polled_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t closed_ = 0;
  std::thread thread_;
};

} // namespace actorps::test
