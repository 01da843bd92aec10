#include "actors/link/tls_stream.hpp"

#include "actors/tls/tls_session.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace actorps {

namespace {

namespace net = caf::io::network;

class tls_stream final : public byte_stream {
public:
  tls_stream(const tls_files& files, int fd) : fd_(fd) {
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    try {
      session_ = std::make_unique<tls_session>(files, fd_, true);
      session_->tune_for_bulk();
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
  ~tls_stream() override {
    session_.reset();  // SSL_free before the descriptor goes
    ::close(fd_);
  }

  result read(void* data, std::size_t n) override {
    bool was_established = session_->established();
    std::size_t got = 0;
    if (session_->read_some(got, data, n) == net::rw_state::failure)
      return {was_established ? outcome::failed : outcome::refused, 0, 0, false};
    if (got > 0) return {outcome::progress, got, 0, false};
    return {outcome::would_block, 0, 0, session_->wants_write()};
  }

  /// Writes the parts one after another (one TLS record or more each) until the socket is full.
  result write(const iovec* parts, int count) override {
    std::size_t moved = 0;
    for (int i = 0; i < count; ++i) {
      std::size_t sent = 0;
      if (session_->write_some(sent, parts[i].iov_base, parts[i].iov_len)
          == net::rw_state::failure)
        return moved > 0 ? result{outcome::progress, moved, 0, false}
                         : result{outcome::failed, 0, 0, false};
      moved += sent;
      if (sent < parts[i].iov_len) break;
    }
    if (moved > 0) return {outcome::progress, moved, 0, false};
    return {outcome::would_block, 0, 0, session_->wants_write()};
  }

  int fd() const override { return fd_; }
  bool authenticated() const override { return session_->established(); }
  std::string peer_identity() const override { return session_->peer_common_name(); }
  bool buffered() const override { return session_->holds_unread(); }
  std::string failure() const override { return session_->failure(); }

private:
  int fd_;
  std::unique_ptr<tls_session> session_;
};

} // namespace

std::unique_ptr<byte_stream> make_tls_stream(const tls_files& files, int fd) {
  return std::make_unique<tls_stream>(files, fd);
}

} // namespace actorps
