#include "actors/net/shard_link_server.hpp"

#include "actors/protocol/errors.hpp"

#include <caf/all.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

namespace actorps {

namespace {

using refused_counter = std::shared_ptr<std::atomic<std::size_t>>;

constexpr auto hello_timeout = std::chrono::milliseconds(10000);

/// Asks the shard for each request the reader hands over, in arrival order (the shard sees a
/// connection's requests in the order the client sent them), and writes every answer the moment
/// it has it. Detached: a send blocks while the socket is full.
caf::behavior link_writer(caf::event_based_actor* self, std::shared_ptr<link_socket> link,
                          ps_shard_actor shard, caf::timespan timeout) {
  auto ask = [=](uint64_t id, auto&&... xs) {
    self->request(shard, timeout, std::forward<decltype(xs)>(xs)...)
      .then([=](wire_buffer& reply) { if (link->send(frame_kind::reply, id, reply)) self->quit(); },
            [=](caf::error& err) { if (link->send_failure(id, err)) self->quit(); });
  };
  return {
    [=](push_pull_atom a, uint64_t id, wire_buffer& push) { ask(id, a, std::move(push)); },
    [=](pull_atom a, uint64_t id, int32_t worker, int64_t clock) { ask(id, a, worker, clock); },
    [=](snapshot_atom a, uint64_t id) { ask(id, a); },
    [=](pull_atom a, uint64_t id, wire_buffer& pull) { ask(id, a, std::move(pull)); },
    [=](snapshot_atom a, uint64_t id, wire_buffer& pull) { ask(id, a, std::move(pull)); },
  };
}

/// Serves one connection: a hello naming this shard, then reads request frames until the client
/// closes, handing each to the connection's writer. Anything that is not a well-formed frame ends
/// the connection with a log line. A blocking actor: it waits in recv() between requests.
void link_session(caf::blocking_actor* self, std::shared_ptr<link_socket> link,
                  ps_shard_actor shard, int32_t shard_index, shard_link_server::log_fn log,
                  refused_counter refused) {
  auto refuse = [&](const std::string& why) {
    ++*refused;
    log("refused a data connection from " + link->peer() + ": " + why);
    link->shutdown();
  };
  frame_header h;
  link->set_receive_timeout(hello_timeout);  // a silent stranger does not keep this thread
  if (auto err = link->receive_header(h)) {
    if (err == caf::sec::request_timeout)
      refuse("no hello within " + std::to_string(hello_timeout.count()) + " ms");
    return;  // else it connected and left without a word
  }
  link->set_receive_timeout(std::chrono::milliseconds{0});
  if (auto why = check_header(h); !why.empty()) return refuse(why);
  if (static_cast<frame_kind>(h.kind) != frame_kind::hello)
    return refuse("the first frame is not a hello");
  if (h.a != shard_index) {
    link->send_failure(0, make_error(errc::wrong_shard, "this is shard " + std::to_string(shard_index)
                                                          + ", not " + std::to_string(h.a)));
    return refuse("it asked for shard " + std::to_string(h.a));
  }
  // The client's own request timeout bounds every request made for it (at least 1 s).
  caf::timespan timeout = std::chrono::milliseconds(std::max<int64_t>(h.b, 1000));
  if (link->send(make_header(frame_kind::reply))) return;
  auto writer = self->system().spawn<caf::detached>(link_writer, link, shard, timeout);
  while (!link->receive_header(h)) {
    if (auto why = check_header(h); !why.empty()) {
      refuse(why);
      break;
    }
    auto kind = static_cast<frame_kind>(h.kind);
    if (kind == frame_kind::push_pull || kind == frame_kind::keyed_pull
        || kind == frame_kind::keyed_snapshot) {
      auto payload = link->receive_buffer(h);
      if (!payload) break;
      if (kind == frame_kind::push_pull)
        caf::anon_send(writer, push_pull_atom::value, h.id, std::move(*payload));
      else if (kind == frame_kind::keyed_pull)
        caf::anon_send(writer, pull_atom::value, h.id, std::move(*payload));
      else
        caf::anon_send(writer, snapshot_atom::value, h.id, std::move(*payload));
    } else if (kind == frame_kind::pull) {
      caf::anon_send(writer, pull_atom::value, h.id, static_cast<int32_t>(h.a), h.b);
    } else if (kind == frame_kind::snapshot) {
      caf::anon_send(writer, snapshot_atom::value, h.id);
    } else {
      refuse("a frame of kind " + std::to_string(h.kind) + " where a request belongs");
      break;
    }
  }
  caf::anon_send_exit(writer, caf::exit_reason::user_shutdown);  // the client has gone
}

/// Listens on a fresh abstract Unix socket; its name carries 64 random bits, so a client on
/// another host that happens to try it finds nothing. Returns the descriptor and the name.
std::pair<int, std::string> listen_local() {
  std::random_device rd;
  char name[40];
  std::snprintf(name, sizeof name, "actorps-link-%08x%08x", rd(), rd());
  socklen_t len = 0;
  auto addr = local_address(name, len);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {-1, {}};
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 64) != 0) {
    ::close(fd);
    return {-1, {}};  // TCP alone still works
  }
  return {fd, name};
}

} // namespace

caf::expected<std::unique_ptr<shard_link_server>>
shard_link_server::listen(const std::string& host, uint16_t port, log_fn log) {
  std::string why = "no address";
  auto found = resolve_stream(host, port, true, why);
  for (auto* ai = found.get(); ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    uint16_t actual = bound.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    auto [local_fd, local_name] = listen_local();
    return std::unique_ptr<shard_link_server>(
      new shard_link_server(fd, actual, local_fd, std::move(local_name), std::move(log)));
  }
  return caf::make_error(caf::sec::cannot_open_port, "cannot listen for data links on " + host
                                                       + ":" + std::to_string(port) + ": " + why);
}

shard_link_server::shard_link_server(int fd, uint16_t port, int local_fd, std::string local_name,
                                     log_fn log)
  : fd_(fd), port_(port), local_fd_(local_fd), local_name_(std::move(local_name)),
    log_(std::move(log)) {}

void shard_link_server::serve(caf::actor_system& sys, ps_shard_actor shard, int32_t shard_index) {
  acceptor_ = std::thread([=, &sys] { accept_loop(fd_, sys, shard, shard_index); });
  if (local_fd_ >= 0)
    local_acceptor_ = std::thread([=, &sys] { accept_loop(local_fd_, sys, shard, shard_index); });
}

void shard_link_server::accept_loop(int listener, caf::actor_system& sys, ps_shard_actor shard,
                                    int32_t shard_index) {
  for (;;) {
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      std::lock_guard<std::mutex> guard{mutex_};
      if (!stopping_) log_("stopped accepting data links: " + std::string(std::strerror(errno)));
      return;
    }
    tune_link_socket(fd);
    auto link = std::make_shared<link_socket>(fd);
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (stopping_) return;
      sessions_.erase(std::remove_if(sessions_.begin(), sessions_.end(),
                                     [](const auto& s) { return s.expired(); }),
                      sessions_.end());
      sessions_.push_back(link);
    }
    // A blocking actor (a thread of its own): it waits in recv() between requests.
    sys.spawn(link_session, std::move(link), shard, shard_index, log_, refused_);
  }
}

std::size_t shard_link_server::refused() const { return refused_->load(); }

shard_link_server::~shard_link_server() {
  std::vector<std::shared_ptr<link_socket>> open;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    stopping_ = true;
    for (auto& s : sessions_)
      if (auto link = s.lock()) open.push_back(std::move(link));
  }
  ::shutdown(fd_, SHUT_RDWR);  // ends the blocked accept()
  if (local_fd_ >= 0) ::shutdown(local_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  if (local_acceptor_.joinable()) local_acceptor_.join();
  ::close(fd_);
  if (local_fd_ >= 0) ::close(local_fd_);
  for (auto& link : open) link->shutdown();  // ends the sessions' blocked recv()
}

} // namespace actorps
