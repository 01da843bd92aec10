#include "actors/link/byte_stream.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace actorps {

namespace {

class socket_stream final : public byte_stream {
public:
  explicit socket_stream(int fd) : fd_(fd) {
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }
  ~socket_stream() override {
    for (int d : held_) ::close(d);
    ::close(fd_);
  }

  result read(void* data, std::size_t n) override {
    for (;;) {
      // With room for descriptors a client passes (shm_offer): without it the kernel would drop
      // them, and the client could not tell.
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_held_descriptors)];
      iovec part{data, n};
      msghdr msg{};
      msg.msg_iov = &part;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      auto got = ::recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
      if (got > 0) keep_descriptors(msg);
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
    return send(msg);
  }

  result write_with_descriptor(const iovec* parts, int count, int fd) override {
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(parts);
    msg.msg_iovlen = static_cast<std::size_t>(count);
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    auto* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    return send(msg);
  }

  int fd() const override { return fd_; }

  std::vector<int> take_descriptors() override { return std::move(held_); }

private:
  result send(msghdr& msg) {
    for (;;) {
      auto sent = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (sent >= 0) return {outcome::progress, static_cast<std::size_t>(sent), 0, false};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {outcome::would_block, 0, 0, true};
      return {outcome::failed, 0, errno, false};
    }
  }

  void keep_descriptors(msghdr& msg) {
    for (auto* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int d = -1;
        std::memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof d);
        if (held_.size() < max_held_descriptors) held_.push_back(d);
        else ::close(d);
      }
    }
  }

  int fd_;
  std::vector<int> held_;
};

} // namespace

std::unique_ptr<byte_stream> make_socket_stream(int fd) {
  return std::make_unique<socket_stream>(fd);
}

} // namespace actorps
