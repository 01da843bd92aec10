#include "actors/link/shard_link_server.hpp"

#include "actors/link/event_loop.hpp"
#include "actors/link/link_hub.hpp"
#include "actors/link/loop_execution_unit.hpp"
#include "actors/link/link_verbs.hpp"
#include "actors/link/short_slice.hpp"
#include "actors/link/tls_stream.hpp"
#include "actors/tls/tls_session.hpp"
#include "actors/protocol/link_memory.hpp"
#include "actors/protocol/errors.hpp"
#include "kernels/denormals.hpp"

#include <caf/all.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <stdexcept>

namespace actorps {

namespace {

using limit_atom = caf::atom_constant<caf::atom("linklimit")>;
/// (link_ask, ticket, frame kind, a, b, payload, progress): a request off the link for the shard.
using link_ask_atom = caf::atom_constant<caf::atom("linkask")>;

/// The listeners' backlog (capped by net.core.somaxconn, 4096 by default): room for a flood's
/// connections waiting to be accepted, each to take a stranger's place, so that the kernel does
/// not drop a worker's connection attempt while they wait (a full backlog drops SYNs, which the
/// client retries only after 1 s, then 3 s, ...).
constexpr int listen_backlog = 4096;

/// Where a push_pull's reply goes ahead in parts: to the hub, for the request's ticket.
class hub_reply_stream final : public reply_stream {
public:
  hub_reply_stream(std::shared_ptr<link_hub> hub, uint64_t ticket, std::size_t part_bytes)
    : hub_(std::move(hub)), ticket_(ticket), part_bytes_(part_bytes) {}
  void send_part(const wire_buffer& reply, std::size_t from, std::size_t to) override {
    hub_->answer_part(ticket_, reply, from, to);
  }
  std::size_t part_bytes() const override { return part_bytes_; }

private:
  std::shared_ptr<link_hub> hub_;
  uint64_t ticket_;
  std::size_t part_bytes_;
};

/// The one actor that asks the shard for every connection: requests arrive in the order the
/// loop read them (one sender, one mailbox), so the shard sees each connection's requests in the
/// order its client sent them; each answer is written to its connection the moment it comes (a
/// held pull's answer may overtake nothing but its successors), from this actor's thread with a
/// non-blocking send (link_hub::answer). It never blocks.
caf::behavior shard_asker(caf::event_based_actor* self, ps_shard_actor shard,
                          std::shared_ptr<event_loop> loop, std::shared_ptr<link_hub> hub,
                          link_limits limits) {
  // No timeout here: the hub times requests out itself (link_hub.hpp).
  auto ask = [=](uint64_t ticket, auto&&... xs) {
    self->request(shard, caf::infinite, std::forward<decltype(xs)>(xs)...)
      .then([=](wire_buffer& reply) { hub->answer(ticket, std::move(reply)); },
            [=](caf::error& err) { hub->answer(ticket, std::move(err)); });
  };
  return {
    // A request off the link, as the shard message its verb stands for (link_verbs.hpp). A
    // push's reply may go ahead in parts (reply_stream.hpp); a push still arriving comes with
    // its progress (request_progress.hpp), and the shard applies it as it does, or declines.
    [=](link_ask_atom, uint64_t ticket, uint16_t kind, int64_t a, int64_t b, wire_buffer& payload,
        request_progress_ptr& progress) {
      with_shard_message(static_cast<frame_kind>(kind), a, b, std::move(payload),
                         [&](auto verb, auto atom, auto&&... args) {
        if constexpr (decltype(verb)::is_push) {
          push_request& push = std::get<0>(std::tie(args...));
          if (limits.reply_part_bytes > 0)
            push.reply_stream = std::make_shared<hub_reply_stream>(hub, ticket, limits.reply_part_bytes);
          push.progress = std::move(progress);
        }
        ask(ticket, atom, std::move(args)...);
      });
    },
    // The largest legitimate request follows from the shard's size: its dense snapshot, and
    // whether it holds sparse tables (request_frame_limit). Both fail before the shard's init.
    [=](limit_atom) {
      auto unknown = [=](caf::error&) {
        loop->post([=] { hub->limit_learned(std::nullopt); });
      };
      auto t = std::chrono::seconds(10);
      self->request(shard, t, stats_atom::value).then(
        [=](shard_stats& stats) {
          bool sparse = !stats.table_rows.empty();
          self->request(shard, t, snapshot_atom::value).then(
            [=](wire_buffer& snap) {
              auto limit = request_frame_limit(snap.size_bytes(), sparse, limits);
              loop->post([=] { hub->limit_learned(limit); });
            },
            unknown);
        },
        unknown);
    },
  };
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
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, listen_backlog) != 0) {
    ::close(fd);
    return {-1, {}};  // TCP alone still works
  }
  return {fd, name};
}

} // namespace

caf::expected<std::unique_ptr<shard_link_server>>
shard_link_server::listen(const std::string& host, uint16_t port, log_fn log, link_limits limits,
                          tls_files tls) {
  if (tls.enabled()) {
    try {  // loads the files now, not on the loop thread at the first connection
      tls_session probe(tls, -1, true);
    } catch (const std::runtime_error& e) {
      return caf::make_error(caf::sec::cannot_open_port,
                             "cannot serve data links over TLS: " + std::string(e.what()));
    }
  }
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
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, listen_backlog) != 0) {
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
    // With TLS, the plain local socket of clients proven by a ticket (link_hub.hpp).
    auto [proven_fd, proven_name] = local_fd >= 0 && tls.enabled() ? listen_local()
                                                                   : std::pair<int, std::string>{-1, {}};
    // Shared memory is offered on a plain local socket: the shard's parameters then go in this
    // process's arena, from which replies are sent by reference (link_memory.hpp).
    if (local_fd >= 0 && (!tls.enabled() || proven_fd >= 0))
      if (auto no_arena = enable_link_memory(); !no_arena.empty())
        if (log) log("no arena for replies by reference (" + no_arena + "): shared memory copies them");
    try {
      auto server = std::unique_ptr<shard_link_server>(new shard_link_server(
        fd, actual, local_fd, std::move(local_name), std::move(log), limits, tls));
      server->proven_fd_ = proven_fd;
      server->proven_name_ = std::move(proven_name);
      return server;
    } catch (const std::system_error& e) {
      why = e.what();
      ::close(fd);
      if (local_fd >= 0) ::close(local_fd);
      if (proven_fd >= 0) ::close(proven_fd);
    }
  }
  return caf::make_error(caf::sec::cannot_open_port, "cannot listen for data links on " + host
                                                       + ":" + std::to_string(port) + ": " + why);
}

shard_link_server::shard_link_server(int fd, uint16_t port, int local_fd, std::string local_name,
                                     log_fn log, link_limits limits, tls_files tls)
  : fd_(fd), port_(port), local_fd_(local_fd), local_name_(std::move(local_name)),
    log_(std::move(log)), limits_(limits), tls_(std::move(tls)), loop_(std::make_shared<event_loop>()) {}

void shard_link_server::serve(caf::actor_system& sys, ps_shard_actor shard, int32_t shard_index) {
  // The hooks run on the loop thread, which starts after asker_ and unit_ are set and stops
  // before this server ends. They send with the loop's execution unit: the asker, and the shard
  // it asks, run on the loop's thread after the batch of events (loop_execution_unit.hpp).
  link_hub::hooks hooks;
  hooks.ask = [this](link_request&& r) {
    unit_->send(asker_, link_ask_atom::value, r.ticket, static_cast<uint16_t>(r.kind), r.a, r.b,
                std::move(r.payload), std::move(r.progress));
  };
  hooks.learn_limit = [this] { unit_->send(asker_, limit_atom::value); };
  // Straight to the shard: the asker's push_pull may reach it later, and the shard reads the
  // progress itself then (a message about a push it does not apply is dropped).
  hooks.progress = [this, to = caf::actor_cast<caf::actor>(shard)](request_progress_ptr p) {
    unit_->send(to, push_pull_atom::value, push_request::more_arrived(std::move(p)));
  };
  if (tls_.enabled())
    hooks.make_stream = [files = tls_](int fd) { return make_tls_stream(files, fd); };
  hub_ = std::make_shared<link_hub>(*loop_, fd_, local_fd_, shard_index, limits_, std::move(hooks),
                                    log_);
  if (proven_fd_ >= 0) hub_->serve_proven_local(proven_fd_, proven_name_);
  std::atomic_store(counted_hub_.get(), hub_);
  asker_ = sys.spawn(shard_asker, shard, loop_, hub_, limits_);
  unit_ = std::make_shared<loop_execution_unit>(sys);
  unit_->add_guest(asker_);
  unit_->add_guest(caf::actor_cast<caf::actor>(shard));
  auto* hub = hub_.get();
  auto* unit = unit_.get();
  loop_->start([hub] { hub->on_timer(); }, [unit] { unit->run_ready(); });
  loop_->post([unit] {
    unit->bind_to_this_thread();
    flush_denormals_to_zero();  // the shard's optimizer runs here too (system_config.cpp)
    request_short_slice();
  });
  loop_->post([hub] { hub->start(); });
}

std::size_t shard_link_server::refused() const { return hub_ ? hub_->refused() : 0; }
std::size_t shard_link_server::unauthorised() const { return hub_ ? hub_->unauthorised() : 0; }
std::size_t shard_link_server::unproven() const { return hub_ ? hub_->unproven() : 0; }
std::function<std::size_t()> shard_link_server::unauthorised_counter() const {
  return [cell = counted_hub_] {
    auto hub = std::atomic_load(cell.get());
    return hub ? hub->unauthorised() : std::size_t{0};
  };
}
std::size_t shard_link_server::connections() const { return hub_ ? hub_->connections() : 0; }
std::size_t shard_link_server::evicted() const { return hub_ ? hub_->evicted() : 0; }
std::size_t shard_link_server::loop_turns() const { return unit_ ? unit_->turns() : 0; }
std::size_t shard_link_server::parts_sent() const { return hub_ ? hub_->parts_sent() : 0; }
std::size_t shard_link_server::frame_limit() const {
  return hub_ ? hub_->frame_limit() : limits_.frame_limit_before_init;
}

shard_link_server::~shard_link_server() {
  loop_->stop();  // no handler or posted task runs after this
  if (hub_) hub_->close_all();  // their clients see the link break; a late answer finds none
  hub_.reset();
  if (unit_) unit_->hand_over();  // what the loop left ready runs on CAF's scheduler
  if (asker_) caf::anon_send_exit(asker_, caf::exit_reason::user_shutdown);
  ::close(fd_);
  if (local_fd_ >= 0) ::close(local_fd_);
  if (proven_fd_ >= 0) ::close(proven_fd_);
}

} // namespace actorps
