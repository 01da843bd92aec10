#include "actors/link/tls_channel.hpp"

#include "actors/tls/tls_session.hpp"

#include <fcntl.h>
#include <poll.h>

#include <cerrno>

namespace actorps {

namespace net = caf::io::network;

tls_channel::tls_channel(const tls_files& files, int fd)
  : fd_(fd), session_(std::make_unique<tls_session>(files, fd, false)) {
  session_->tune_for_bulk();
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

tls_channel::~tls_channel() = default;

bool tls_channel::wait(bool for_write, int timeout_ms) const {
  pollfd p{fd_, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
  for (;;) {
    int rc = ::poll(&p, 1, timeout_ms);
    if (rc >= 0) return rc > 0;  // readiness, a hang-up or an error: the next call tells which
    if (errno != EINTR) return true;
  }
}

tls_channel::status tls_channel::handshake(std::chrono::milliseconds timeout, std::string& why) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool for_write = false;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      std::size_t got = 0;
      if (session_->read_some(got, nullptr, 0) == net::rw_state::failure) {
        why = session_->failure();
        return status::failed;
      }
      if (session_->established()) return status::ok;
      for_write = session_->wants_write();
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !wait(for_write, static_cast<int>(left.count()))) {
      why = "no TLS handshake within " + std::to_string(timeout.count()) + " ms";
      return status::timeout;
    }
  }
}

std::string tls_channel::peer_common_name() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return session_->peer_common_name();
}

tls_channel::status tls_channel::send_all(const void* data, std::size_t n, std::string& why) {
  return transfer(const_cast<char*>(static_cast<const char*>(data)), n, true, -1, why);
}

tls_channel::status tls_channel::receive_all(void* data, std::size_t n,
                                             std::chrono::milliseconds timeout, std::string& why) {
  int timeout_ms = timeout.count() > 0 ? static_cast<int>(timeout.count()) : -1;
  return transfer(static_cast<char*>(data), n, false, timeout_ms, why);
}

tls_channel::status tls_channel::transfer(char* p, std::size_t n, bool sending, int timeout_ms,
                                          std::string& why) {
  while (n > 0) {
    bool for_write = false;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      std::size_t moved = 0;
      auto state = sending ? session_->write_some(moved, p, n) : session_->read_some(moved, p, n);
      if (state == net::rw_state::failure) {
        why = session_->failure();
        return status::failed;
      }
      p += moved;
      n -= moved;
      if (moved > 0) continue;
      for_write = session_->wants_write();
    }
    if (!wait(for_write, timeout_ms)) return status::timeout;
  }
  return status::ok;
}

} // namespace actorps
