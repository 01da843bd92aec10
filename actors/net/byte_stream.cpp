#include "actors/net/byte_stream.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace actorps {

namespace {

class socket_stream final : public byte_stream {
public:
  explicit socket_stream(int fd) : fd_(fd) {
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }
  ~socket_stream() override { ::close(fd_); }

  result read(void* data, std::size_t n) override {
    for (;;) {
      auto got = ::recv(fd_, data, n, 0);
      if (got > 0) return {outcome::progress, static_cast<std::size_t>(got), 0, false};
      if (got == 0) return {outcome::closed, 0, 0, false};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {outcome::would_block, 0, 0, false};
      return {outcome::failed, 0, errno, false};
    }
  }

  result write(const iovec* parts, int count) override {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(parts);
    msg.msg_iovlen = static_cast<std::size_t>(count);
    for (;;) {
      auto sent = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (sent >= 0) return {outcome::progress, static_cast<std::size_t>(sent), 0, false};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {outcome::would_block, 0, 0, true};
      return {outcome::failed, 0, errno, false};
    }
  }

  int fd() const override { return fd_; }

private:
  int fd_;
};

} // namespace

std::unique_ptr<byte_stream> make_socket_stream(int fd) {
  return std::make_unique<socket_stream>(fd);
}

} // namespace actorps
