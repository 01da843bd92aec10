#include "actors/deploy/remote_shard.hpp"

#include "actors/guard/connect.hpp"
#include "actors/link/data_link_path.hpp"
#include "actors/link/shard_proxy.hpp"
#include "actors/link/shm_region.hpp"
#include "actors/guard/tls_config.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/link_memory.hpp"
#include "actors/protocol/log.hpp"

#include <caf/all.hpp>

#include <unistd.h>

#include <cstring>

namespace actorps {

namespace {

/// The answer to a request just sent on `link`, its header into `h`: the shard's refusal, or
/// malformed_message (`expected`: what was due) unless it is a well-formed reply.
caf::error receive_reply(link_socket& link, frame_header& h, const char* expected) {
  auto err = link.receive_header(h);
  if (!err && !check_header(h).empty()) err = make_error(errc::malformed_message, check_header(h));
  if (!err && static_cast<frame_kind>(h.kind) == frame_kind::failure) {
    caf::error refused;
    err = link.receive_failure(h, refused);
    if (!err) err = std::move(refused);
  } else if (!err && static_cast<frame_kind>(h.kind) != frame_kind::reply) {
    err = make_error(errc::malformed_message, expected);
  }
  return err;
}

/// Says hello to shard `index` on `link`, with a ticket (local_ticket_secret bytes) on a proven
/// local socket, and waits for the answer.
caf::error say_hello(link_socket& link, int32_t index, std::chrono::milliseconds request_timeout,
                     const unsigned char* ticket = nullptr) {
  frame_header h;
  link.set_receive_timeout(request_timeout);  // for the hello's answer
  auto hello = make_header(frame_kind::hello, 0, index, request_timeout.count(),
                           ticket ? local_ticket_secret : 0);
  auto err = link.send(hello, ticket);
  return err ? err : receive_reply(link, h, "no hello reply");
}

/// Over `link` (TLS on the shard's local socket, after the hello) takes a one-time ticket and
/// enters the shard's proven local socket with it: a plain connection that the shard knows by
/// the identity the TLS handshake proved. The socket's name came inside TLS from the server
/// whose certificate was checked, so the plain connection reaches that same process.
caf::expected<std::shared_ptr<link_socket>>
enter_proven_local(link_socket& link, int32_t index, std::chrono::milliseconds request_timeout) {
  frame_header h;
  auto err = link.send(make_header(frame_kind::local_ticket, 1));
  if (!err) err = receive_reply(link, h, "no ticket in the answer");
  if (!err && h.size != local_ticket_bytes)
    err = make_error(errc::malformed_message, "no ticket in the answer");
  if (err) return err;
  auto answer = link.receive_buffer(h);
  if (!answer) return std::move(answer.error());
  const auto* bytes = answer->bytes();
  const auto* name = reinterpret_cast<const char*>(bytes + local_ticket_secret);
  auto plain = connect_local_link(
    std::string(name, ::strnlen(name, local_ticket_bytes - local_ticket_secret)));
  if (!plain) return plain;
  if (auto refused = say_hello(**plain, index, request_timeout, bytes)) {
    (*plain)->shutdown();
    return refused;
  }
  return plain;
}

/// Creates the two rings (requests, replies), maps them, and hands their descriptors to the
/// shard over `link` (a plain local socket, after the hello); the descriptors are closed here
/// whatever happens, so that only the mappings remain.
caf::expected<shm_link> offer_shared_memory(link_socket& link) {
  if (link.is_tls() || !link.is_local())
    return make_error(errc::malformed_message, "shared memory needs a plain local socket");
  std::string why;
  int fds[2] = {create_shm_region(shm_ring_bytes, why), -1};
  if (fds[0] >= 0) fds[1] = create_shm_region(shm_ring_bytes, why);
  auto close_fds = [&] {
    for (int d : fds)
      if (d >= 0) ::close(d);
  };
  if (fds[1] < 0) {
    close_fds();
    return make_error(errc::malformed_message, why);
  }
  auto requests = shm_mapping::map(fds[0], shm_ring_bytes);
  auto replies = shm_mapping::map(fds[1], shm_ring_bytes);
  caf::error err = !requests ? requests.error() : !replies ? replies.error() : caf::error{};
  // The process's arena goes along: pushes built on a gradient there travel by reference.
  // Made at the first offer, said once if it cannot be.
  [[maybe_unused]] static const bool arena_tried = [] {
    if (auto why = enable_link_memory(); !why.empty())
      log_line(log_level::warn, "data link",
               "no arena for pushes by reference (" + why + "): shared memory copies them");
    return true;
  }();
  const int arena = link_memory_fd();
  if (!err) {
    int sent[3] = {fds[0], fds[1], arena};
    err = link.send_with_fds(make_header(frame_kind::shm_offer, 0, int64_t(shm_ring_bytes),
                                         int64_t(shm_ring_bytes)),
                             sent, arena >= 0 ? 3 : 2);
  }
  close_fds();  // the rings' descriptors; the arena's stays the process's
  frame_header h;
  std::vector<int> answered;  // the shard's arena, when it has one
  if (!err) err = link.receive_header(h, answered);
  std::shared_ptr<peer_arena> shard_arena;
  if (!err && answered.size() > 1) err = make_error(errc::malformed_message, "more than an arena");
  if (!err && answered.size() == 1) {
    auto mapped = peer_arena::open(answered[0]);
    if (mapped) shard_arena = std::move(*mapped);
    else err = mapped.error();
  }
  for (int d : answered) ::close(d);
  if (!err && !check_header(h).empty()) err = make_error(errc::malformed_message, check_header(h));
  if (!err && static_cast<frame_kind>(h.kind) == frame_kind::failure) {
    caf::error refused;
    err = link.receive_failure(h, refused);
    if (!err) err = std::move(refused);
  } else if (!err && (static_cast<frame_kind>(h.kind) != frame_kind::reply || h.size != 0)) {
    err = make_error(errc::malformed_message, "no answer to the offer");
  }
  if (err) return err;
  return shm_link{shm_ring{std::move(*requests), arena >= 0},
                  shm_inbox{std::move(*replies), std::move(shard_arena)}};
}

} // namespace

std::vector<std::shared_ptr<parameter_destination>>
destinations_of(const std::vector<remote_shard>& shards) {
  std::vector<std::shared_ptr<parameter_destination>> out;
  for (const auto& s : shards) out.push_back(s.destination);
  return out;
}

void remote_shard::close() const {
  if (!link) return;
  link->shutdown();
  caf::anon_send_exit(handle, caf::exit_reason::user_shutdown);
}

caf::expected<remote_shard> connect_shard(caf::actor_system& sys, const host_port& addr,
                                          int32_t index, caf::timespan connect_timeout,
                                          std::chrono::milliseconds request_timeout) {
  auto task = connect_to<ps_task_actor>(sys, addr, connect_timeout);
  if (!task) return std::move(task.error());
  ps_shard_actor shard;
  uint16_t port = 0;
  std::string local_name;
  caf::error failed;
  caf::scoped_actor self{sys};
  auto fail = [&](caf::error& err) { failed = std::move(err); };
  // A live ps task answers these two at once; a frozen one (SIGSTOP, a hung host) holds the
  // connection open and would hold this worker for the whole request timeout (120 s) instead
  // of failing it so that its restart can try again.
  const auto handshake = std::min<caf::timespan>(request_timeout, connect_timeout);
  self->request(*task, handshake, shard_atom::value)
    .receive([&](ps_shard_actor& s) { shard = std::move(s); }, fail);
  if (!failed)
    self->request(*task, handshake, link_atom::value)
      .receive(
        [&](uint16_t p, std::string& name) {
          port = p;
          local_name = std::move(name);
        },
        fail);
  if (failed)
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           "the ps task at " + addr.text() + " did not say where its shard "
                             + "and data link are: " + describe(failed));
  if (port == 0) return remote_shard{shard, shard, nullptr, *task, nullptr};  // all over CAF

  // The shard's local socket when it is on this host (and in this network namespace), with
  // shared memory (with TLS: on its proven local socket); else TCP. --data-link may force one.
  const auto path = configured_data_link_path();
  const auto tls = configured_tls(sys.config());
  caf::expected<std::shared_ptr<link_socket>> link{caf::error{}};
  if (path != data_link_path::tcp) link = connect_local_link(local_name);
  if (!link && path != data_link_path::automatic && path != data_link_path::tcp)
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           std::string("--data-link ") + data_link_path_name(path)
                             + ": the local socket of shard " + std::to_string(index)
                             + " is not reachable (" + describe(link.error()) + ")");
  bool shared_memory = link && (path == data_link_path::automatic || path == data_link_path::shm);
  if (!link)
    link = connect_link(addr.host, port,
                        std::chrono::duration_cast<std::chrono::milliseconds>(connect_timeout));
  if (!link) return std::move(link.error());
  auto attached = attach_link(sys, shard, std::move(*link), index, request_timeout, tls,
                              shared_memory);
  if (!attached && shared_memory && path == data_link_path::automatic) {
    // No shared memory to be had (no memfd here, a shard that refuses it): the local socket.
    log_line(log_level::warn, "data link",
             "shard " + std::to_string(index) + ": " + describe(attached.error())
               + "; using its local socket alone");
    if (auto again = connect_local_link(local_name))
      attached = attach_link(sys, shard, std::move(*again), index, request_timeout, tls, false);
  }
  if (attached) attached->task = *task;
  return attached;
}

caf::expected<remote_shard> attach_link(caf::actor_system& sys, ps_shard_actor shard,
                                        std::shared_ptr<link_socket> link, int32_t index,
                                        std::chrono::milliseconds request_timeout,
                                        const tls_files& tls, bool shared_memory) {
  if (tls.enabled())
    if (auto err = link->start_tls(tls, "ps:" + std::to_string(index), request_timeout))
      return err;
  if (auto hello = say_hello(*link, index, request_timeout)) {
    link->shutdown();
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           "data link of shard " + std::to_string(index) + " at " + link->peer()
                             + ": " + describe(hello));
  }
  bool proven = false;
  if (shared_memory && link->is_tls()) {
    // Bytes that stay on this host gain nothing from the cipher: the identity TLS proved goes
    // on without it, on the shard's proven local socket.
    auto plain = enter_proven_local(*link, index, request_timeout);
    link->shutdown();
    if (!plain)
      return caf::make_error(caf::sec::cannot_connect_to_node,
                             "data link of shard " + std::to_string(index)
                               + ": the proven local socket: " + describe(plain.error()));
    link = std::move(*plain);
    proven = true;
  }
  std::shared_ptr<shm_ring> ring;
  std::shared_ptr<const shm_inbox> inbox;
  if (shared_memory) {
    auto offered = offer_shared_memory(*link);
    if (!offered) {
      link->shutdown();
      return caf::make_error(caf::sec::cannot_connect_to_node,
                             "data link of shard " + std::to_string(index) + " at " + link->peer()
                               + ": shared memory: " + describe(offered.error()));
    }
    ring = std::make_shared<shm_ring>(std::move(offered->out));
    inbox = std::make_shared<const shm_inbox>(std::move(offered->in));
  }
  link->set_receive_timeout(std::chrono::milliseconds{0});  // answers may be held for long
  auto where = "shard " + std::to_string(index) + " (data link to " + link->peer() + ")";
  auto destination = std::make_shared<parameter_destination>();
  auto proxy = spawn_shard_proxy(sys, shard, link, destination, ring, inbox, std::move(where));
  remote_shard out{std::move(proxy), shard, std::move(link), {}, std::move(destination)};
  out.shared_memory = ring != nullptr;
  out.proven = proven;
  return out;
}

} // namespace actorps
