#include "actors/remote_shard.hpp"

#include "actors/connect.hpp"
#include "actors/errors.hpp"

#include <caf/all.hpp>

namespace actorps {

namespace {

/// One request over the link and its answer. Any transport problem ends the link: a reply
/// that never came may still arrive, and must not be taken for the next request's.
caf::result<wire_buffer> call(link_socket& link, const std::string& where, const frame_header& h,
                              const void* payload) {
  auto lost = [&](caf::error err) -> caf::result<wire_buffer> {
    link.shutdown();
    if (err == caf::sec::request_timeout) return err;
    // What a request to a local shard that died gets, so workers read it the same way.
    return caf::make_error(caf::sec::request_receiver_down, where + ": " + describe(err));
  };
  if (auto err = link.send(h, payload)) return lost(std::move(err));
  frame_header r;
  if (auto err = link.receive_header(r)) return lost(std::move(err));
  if (auto why = check_header(r); !why.empty())
    return lost(make_error(errc::malformed_message, why));
  switch (static_cast<frame_kind>(r.kind)) {
    case frame_kind::reply: {
      auto reply = link.receive_buffer(r);
      if (!reply) return lost(std::move(reply.error()));
      return std::move(*reply);
    }
    case frame_kind::failure:  // the shard's own answer (a refused push, say): the link is fine
      return link.receive_failure(r);
    default:
      return lost(make_error(errc::malformed_message,
                             "a frame of kind " + std::to_string(r.kind) + " as an answer"));
  }
}

/// Speaks ps_shard_actor for a local worker or evaluator. Detached: it blocks on its socket
/// while the shard answers (a held pull blocks it until the consistency rule allows).
caf::behavior shard_proxy(caf::event_based_actor* self, ps_shard_actor remote,
                          std::shared_ptr<link_socket> link, std::string where) {
  return {
    [=](push_pull_atom, const wire_buffer& push) {
      return call(*link, where, make_header(frame_kind::push_pull, 0, 0, push.size_bytes()),
                  push.bytes());
    },
    [=](pull_atom, int32_t worker, int64_t clock) {
      return call(*link, where, make_header(frame_kind::pull, worker, clock), nullptr);
    },
    [=](snapshot_atom) { return call(*link, where, make_header(frame_kind::snapshot), nullptr); },
    // Control messages go to the shard itself, over CAF.
    [=](init_atom a, const wire_buffer& x) { return self->delegate(remote, a, x); },
    [=](restore_atom a, const wire_buffer& x, const std::vector<uint32_t>& y) {
      return self->delegate(remote, a, x, y);
    },
    [=](stats_atom a) { return self->delegate(remote, a); },
    [=](leave_atom a, int32_t w) { self->send(remote, a, w); },
    [=](rejoin_atom a, int32_t w) { return self->delegate(remote, a, w); },
    [=](admit_atom a, int32_t w, int64_t c, uint32_t i) { return self->delegate(remote, a, w, c, i); },
    [=](checkpoint_atom a, const std::string& d, int64_t c) { return self->delegate(remote, a, d, c); },
    [=](link_atom a) { return self->delegate(remote, a); },
  };
}

} // namespace

void remote_shard::close() const {
  if (!link) return;
  link->shutdown();
  caf::anon_send_exit(handle, caf::exit_reason::user_shutdown);
}

caf::expected<remote_shard> connect_shard(caf::actor_system& sys, const host_port& addr,
                                          int32_t index, caf::timespan connect_timeout,
                                          std::chrono::milliseconds request_timeout) {
  auto shard = connect_to<ps_shard_actor>(sys, addr, connect_timeout);
  if (!shard) return std::move(shard.error());
  uint16_t port = 0;
  std::string local_name;
  caf::error failed;
  caf::scoped_actor self{sys};
  self->request(*shard, request_timeout, link_atom::value)
    .receive([&](uint16_t p, std::string& name) { port = p; local_name = std::move(name); },
             [&](caf::error& err) { failed = std::move(err); });
  if (failed)
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           "shard at " + addr.text() + " did not say its data link: " + describe(failed));
  if (port == 0) return remote_shard{*shard, *shard, nullptr};  // control and data over CAF

  // The shard's local socket when it is on this host (and in this network namespace), else TCP.
  auto link = connect_local_link(local_name, request_timeout);
  if (!link)
    link = connect_link(addr.host, port,
                        std::chrono::duration_cast<std::chrono::milliseconds>(connect_timeout),
                        request_timeout);
  if (!link) return std::move(link.error());
  return attach_link(sys, *shard, std::move(*link), index, request_timeout);
}

caf::expected<remote_shard> attach_link(caf::actor_system& sys, ps_shard_actor shard,
                                        std::shared_ptr<link_socket> link, int32_t index,
                                        std::chrono::milliseconds request_timeout) {
  frame_header h;
  auto hello = link->send(make_header(frame_kind::hello, index, request_timeout.count()));
  if (!hello) hello = link->receive_header(h);
  if (!hello && !check_header(h).empty()) hello = make_error(errc::malformed_message, check_header(h));
  if (!hello && static_cast<frame_kind>(h.kind) == frame_kind::failure)
    hello = link->receive_failure(h);
  else if (!hello && static_cast<frame_kind>(h.kind) != frame_kind::reply)
    hello = make_error(errc::malformed_message, "no hello reply");
  if (hello) {
    link->shutdown();
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           "data link of shard " + std::to_string(index) + " at " + link->peer()
                             + ": " + describe(hello));
  }
  auto where = "shard " + std::to_string(index) + " (data link to " + link->peer() + ")";
  auto proxy = sys.spawn<caf::detached>(shard_proxy, shard, link, std::move(where));
  return remote_shard{caf::actor_cast<ps_shard_actor>(proxy), shard, std::move(link)};
}

} // namespace actorps
