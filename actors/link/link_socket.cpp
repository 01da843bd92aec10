#include "actors/link/link_socket.hpp"

#include "actors/link/link_verbs.hpp"
#include "actors/link/shm_region.hpp"
#include "actors/link/tls_channel.hpp"
#include "actors/protocol/errors.hpp"

#include <caf/atom.hpp>
#include <caf/make_message.hpp>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>
#include <vector>

namespace actorps {

frame_header make_header(frame_kind kind, uint64_t id, int64_t a, int64_t b, uint64_t size) {
  frame_header h;
  h.magic = frame_magic;
  h.version = frame_version;
  h.kind = static_cast<uint16_t>(kind);
  h.id = id;
  h.a = a;
  h.b = b;
  h.size = size;
  return h;
}

std::string check_header(const frame_header& h) {
  if (h.magic != frame_magic) return "not an actorps data frame (bad magic)";
  if (h.version != frame_version)
    return "data frame version " + std::to_string(h.version) + ", expected "
           + std::to_string(frame_version);
  auto kind = kind_of(h.kind);
  const auto verb = verb_of(kind);  // a request: its shape is the verb table's
  const bool carries_message = verb ? verb->has_payload
                                    : kind == frame_kind::reply || kind == frame_kind::reply_part;
  if (in_region(h) && !carries_message)
    return "frame kind " + std::to_string(h.kind) + " cannot lie in shared memory";
  if (in_region(h) && (h.b < 0 || h.b > max_shm_pieces))  // b: the record's pieces
    return "a record of " + std::to_string(h.b) + " pieces";
  if (carries_message) {
    if (h.size % sizeof(capnp::word) != 0 || h.size > max_wire_bytes)
      return "payload of " + std::to_string(h.size) + " bytes";
    return {};
  }
  if (kind == frame_kind::hello) {  // a ticket, or nothing (the hub says which its socket takes)
    if (h.size != 0 && h.size != local_ticket_secret)
      return "a hello with a payload of " + std::to_string(h.size) + " bytes";
    return {};
  }
  if (verb || kind == frame_kind::local_ticket) {
    if (h.size != 0) return "a request of kind " + std::to_string(h.kind) + " with a payload";
    return {};
  }
  if (kind == frame_kind::shm_offer) {
    if (h.size != 0) return "a shared memory offer with a payload";
    return {};
  }
  if (kind == frame_kind::failure) {
    if (h.size > max_failure_text) return "failure text of " + std::to_string(h.size) + " bytes";
    return {};
  }
  return "unknown frame kind " + std::to_string(h.kind);
}

std::string peer_address(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  if (addr.ss_family == AF_UNIX) return "a local socket";
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    port = ntohs(in->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

namespace {

bool is_unix_socket(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 && addr.ss_family == AF_UNIX;
}

} // namespace

link_socket::link_socket(int fd) : fd_(fd), local_(is_unix_socket(fd)), peer_(peer_address(fd)) {}

link_socket::~link_socket() {
  tls_.reset();  // the session before its descriptor
  ::close(fd_);
}

caf::error link_socket::start_tls(const tls_files& files, const std::string& expected_peer,
                                  std::chrono::milliseconds timeout) {
  auto refuse = [&](const std::string& why) {
    shutdown();
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           "data link to " + peer_ + " over TLS: " + why);
  };
  try {
    tls_ = std::make_unique<tls_channel>(files, fd_);
  } catch (const std::runtime_error& e) {
    return refuse(e.what());
  }
  std::string why;
  if (tls_->handshake(timeout, why) != tls_channel::status::ok) return refuse(why);
  auto name = tls_->peer_common_name();
  if (name != expected_peer)
    return refuse("the server's certificate names \"" + name + "\", not " + expected_peer);
  return {};
}

void link_socket::shutdown() {
  std::lock_guard<std::mutex> guard{shutdown_mutex_};
  if (shut_) return;
  shut_ = true;
  ::shutdown(fd_, SHUT_RDWR);
}

caf::error link_socket::broken(const char* what, int err) {
  return broken_with(what, err ? std::strerror(err) : "closed by the peer");
}

caf::error link_socket::broken_with(const char* what, const std::string& why) {
  return caf::error{static_cast<uint8_t>(caf::exit_reason::remote_link_unreachable),
                    caf::atom("exit"),
                    caf::make_message("data link to " + peer_ + ": " + what + ": " + why)};
}

caf::error link_socket::send(const frame_header& h, const void* payload) {
  iovec parts[2] = {{const_cast<frame_header*>(&h), sizeof h},
                    {const_cast<void*>(payload), payload ? h.size : 0}};
  return send_parts(parts, payload && h.size > 0 ? 2 : 1);
}

caf::error link_socket::send_bytes(const void* data, std::size_t n) {
  iovec part{const_cast<void*>(data), n};
  return send_parts(&part, 1);
}

caf::error link_socket::send(frame_header h, const wire_buffer& payload) {
  h.size = payload.size_bytes();
  constexpr std::size_t on_stack = 64;
  iovec few[on_stack];
  std::vector<iovec> many;
  auto pieces = payload.pieces();
  iovec* parts = few;
  if (pieces.size() + 1 > on_stack) {
    many.resize(pieces.size() + 1);
    parts = many.data();
  }
  parts[0] = {&h, sizeof h};
  int count = 1;
  for (const auto& p : pieces) parts[count++] = {const_cast<void*>(p.data), p.bytes};
  return send_parts(parts, count);
}

caf::error link_socket::send(frame_kind kind, uint64_t id, const wire_buffer& payload) {
  return send(make_header(kind, id), payload);
}

/// Writes every byte of `parts`, in order: over TLS piece by piece (each becomes records of its
/// own: the encryption is the pass over the bytes), else with sendmsg, resuming after a partial
/// write (IOV_MAX bounds one call's pieces).
caf::error link_socket::send_parts(iovec* parts, int count) {
  if (tls_) {
    std::string why;
    for (int i = 0; i < count; ++i)
      if (parts[i].iov_len > 0
          && tls_->send_all(parts[i].iov_base, parts[i].iov_len, why) != tls_channel::status::ok)
        return broken_with("send", why);
    return {};
  }
  iovec* next = parts;
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = next;
    msg.msg_iovlen = static_cast<std::size_t>(std::min(count, IOV_MAX));
    auto n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return broken("send", errno);
    }
    auto sent = static_cast<std::size_t>(n);
    while (count > 0 && sent >= next->iov_len) {
      sent -= next->iov_len;
      ++next;
      --count;
    }
    if (count > 0) {
      next->iov_base = static_cast<char*>(next->iov_base) + sent;
      next->iov_len -= sent;
    }
  }
  return {};
}

std::pair<frame_header, std::string> failure_frame(uint64_t id, const caf::error& err) {
  std::string text;
  const auto& context = err.context();
  if (context.size() > 0 && context.match_element<std::string>(0))
    text = context.get_as<std::string>(0);
  if (text.size() > max_failure_text) text.resize(max_failure_text);
  auto h = make_header(frame_kind::failure, id, err.code(),
                       static_cast<int64_t>(static_cast<uint64_t>(err.category())), text.size());
  return {h, std::move(text)};
}

caf::error link_socket::send_failure(uint64_t id, const caf::error& err) {
  auto [h, text] = failure_frame(id, err);
  return send(h, text.data());
}

caf::error link_socket::send_with_fds(const frame_header& h, const int* fds, int count) {
  if (tls_) return broken_with("send", "descriptors cannot travel over TLS");
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  if (count < 1 || count > 4) return broken_with("send", "1 to 4 descriptors at a time");
  iovec part{const_cast<frame_header*>(&h), sizeof h};
  msghdr msg{};
  msg.msg_iov = &part;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * count);
  auto* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * count);
  std::memcpy(CMSG_DATA(c), fds, sizeof(int) * count);
  for (;;) {
    auto n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(sizeof h)) return {};
    if (n < 0 && errno == EINTR) continue;
    if (n >= 0) {  // the descriptors went with the first byte: the rest of the header follows
      iovec rest{reinterpret_cast<char*>(const_cast<frame_header*>(&h)) + n, sizeof h - n};
      return send_parts(&rest, 1);
    }
    return broken("send", errno);
  }
}

caf::error link_socket::receive_bytes(void* data, std::size_t n) {
  if (tls_) {
    std::string why;
    switch (tls_->receive_all(data, n, receive_timeout_, why)) {
      case tls_channel::status::ok: return {};
      case tls_channel::status::timeout:
        return caf::make_error(caf::sec::request_timeout,
                               "data link to " + peer_ + ": no answer within the request timeout");
      case tls_channel::status::failed: break;
    }
    return broken_with("receive", why);
  }
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    auto got = ::recv(fd_, p, n, MSG_WAITALL);
    if (got > 0) {
      p += got;
      n -= static_cast<std::size_t>(got);
    } else if (got == 0) {
      return broken("receive", 0);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return caf::make_error(caf::sec::request_timeout,
                             "data link to " + peer_ + ": no answer within the request timeout");
    } else if (errno != EINTR) {
      return broken("receive", errno);
    }
  }
  return {};
}

caf::error link_socket::receive_parts(iovec* parts, int count) {
  if (tls_) {
    for (int i = 0; i < count; ++i)
      if (auto err = receive_bytes(parts[i].iov_base, parts[i].iov_len)) return err;
    return {};
  }
  while (count > 0 && parts->iov_len == 0) {
    ++parts;
    --count;
  }
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = parts;
    msg.msg_iovlen = static_cast<std::size_t>(std::min(count, IOV_MAX));
    auto got = ::recvmsg(fd_, &msg, MSG_WAITALL);
    if (got == 0) return broken("receive", 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return caf::make_error(caf::sec::request_timeout,
                               "data link to " + peer_ + ": no answer within the request timeout");
      return broken("receive", errno);
    }
    auto n = static_cast<std::size_t>(got);
    while (count > 0 && n >= parts->iov_len) {
      n -= parts->iov_len;
      ++parts;
      --count;
    }
    if (count > 0) {
      parts->iov_base = static_cast<char*>(parts->iov_base) + n;
      parts->iov_len -= n;
    }
  }
  return {};
}

caf::error link_socket::receive_header(frame_header& h) { return receive_bytes(&h, sizeof h); }

caf::error link_socket::receive_header(frame_header& h, std::vector<int>& fds) {
  if (tls_) return broken_with("receive", "descriptors cannot travel over TLS");
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  iovec part{&h, sizeof h};
  msghdr msg{};
  msg.msg_iov = &part;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = ::recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK
                      ? caf::make_error(caf::sec::request_timeout, "data link to " + peer_
                                                                     + ": no answer within the request timeout")
                      : broken("receive", errno);
  if (n == 0) return broken("receive", 0);
  for (auto* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    for (std::size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
      int d = -1;
      std::memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof d);
      fds.push_back(d);
    }
  }
  if (static_cast<std::size_t>(n) == sizeof h) return {};
  return receive_bytes(reinterpret_cast<char*>(&h) + n, sizeof h - static_cast<std::size_t>(n));
}

caf::expected<wire_buffer> link_socket::receive_buffer(const frame_header& h) {
  auto words = h.size / sizeof(capnp::word);
  if (words == 0) return wire_buffer{};
  auto storage = wire_buffer::allocate(words);
  if (auto err = receive_bytes(storage.get(), h.size)) return err;
  return wire_buffer{std::move(storage), words};
}

caf::error link_socket::receive_failure(const frame_header& h, caf::error& carried) {
  std::string text(h.size, '\0');
  if (h.size > 0)
    if (auto err = receive_bytes(text.data(), text.size())) return err;
  auto code = static_cast<uint8_t>(h.a);
  auto category = static_cast<caf::atom_value>(static_cast<uint64_t>(h.b));
  carried = text.empty() ? caf::error{code, category}
                         : caf::error{code, category, caf::make_message(std::move(text))};
  return {};
}

void link_socket::set_receive_timeout(std::chrono::milliseconds timeout) {
  receive_timeout_ = timeout;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000);
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

void tune_link_socket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on a local socket
  // Asking for more than net.core.[rw]mem_max gets the maximum; a buffer as large as the
  // payload lets a 4 MiB frame leave without waiting for the reader.
  int bytes = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

sockaddr_un local_address(const std::string& name, socklen_t& len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  len = 0;
  if (name.empty() || name.size() + 1 > sizeof addr.sun_path) return addr;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

caf::expected<std::shared_ptr<link_socket>> connect_local_link(const std::string& name) {
  socklen_t len = 0;
  auto addr = local_address(name, len);
  if (len == 0) return caf::make_error(caf::sec::cannot_connect_to_node, "no local data link name");
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    auto why = std::string(std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return caf::make_error(caf::sec::cannot_connect_to_node, "local data link: " + why);
  }
  tune_link_socket(fd);
  return std::make_shared<link_socket>(fd);
}

address_list resolve_stream(const std::string& host, uint16_t port, bool passive, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    why = gai_strerror(rc);
    return {nullptr, freeaddrinfo};
  }
  return {found, freeaddrinfo};
}

caf::expected<std::shared_ptr<link_socket>> connect_link(const std::string& host, uint16_t port,
                                                         std::chrono::milliseconds timeout) {
  auto where = host + ":" + std::to_string(port);
  std::string why = "no address";
  auto found = resolve_stream(host, port, false, why);
  for (auto* ai = found.get(); ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    // Non-blocking connect, so that an unreachable host fails within `timeout`.
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
      int err = rc > 0 ? 0 : ETIMEDOUT;
      socklen_t len = sizeof err;
      if (rc > 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    // Back to blocking: frames are sent and received by threads of their own.
    if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    tune_link_socket(fd);
    return std::make_shared<link_socket>(fd);
  }
  return caf::make_error(caf::sec::cannot_connect_to_node, "data link to " + where + ": " + why);
}

} // namespace actorps
