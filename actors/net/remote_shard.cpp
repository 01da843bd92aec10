#include "actors/net/remote_shard.hpp"

#include "actors/net/connect.hpp"
#include "actors/net/data_link_path.hpp"
#include "actors/net/receive_in_place.hpp"
#include "actors/net/shm_region.hpp"
#include "actors/net/tls_config.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"

#include <caf/all.hpp>

#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace actorps {

namespace {

/// Requests sent on the link and not yet answered, shared by the proxy (which sends them) and
/// the thread that reads the answers and hands each to its requester.
class pending_requests {
public:
  /// Registers the current request of the proxy; once the link is broken, returns why instead.
  /// `in_place`: where its reply, the shard's dense parameters, is received (or nowhere).
  caf::error add(uint64_t id, caf::strong_actor_ptr requester, caf::message_id mid,
                 parameter_destination::target in_place) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (broken_) return reason_;
    waiting_.emplace(id, entry{std::move(requester), mid, std::move(in_place)});
    return {};
  }

  /// Where request `id` wants its reply received in place (empty: it does not, or it does not
  /// wait).
  parameter_destination::target in_place(uint64_t id) {
    std::lock_guard<std::mutex> guard{mutex_};
    auto i = waiting_.find(id);
    return i != waiting_.end() ? i->second.in_place : parameter_destination::target{};
  }

  /// Answers request `id` (ignored if it is unknown: it has been failed already).
  void answer(uint64_t id, caf::message msg) {
    entry e;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      auto i = waiting_.find(id);
      if (i == waiting_.end()) return;
      e = std::move(i->second);
      waiting_.erase(i);
    }
    respond(e, std::move(msg));
  }

  /// Fails every waiting request and every later one with `err`.
  void break_all(const caf::error& err) {
    std::map<uint64_t, entry> failed;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      broken_ = true;
      reason_ = err;
      failed.swap(waiting_);
    }
    for (auto& [id, e] : failed) respond(e, caf::make_message(err));
  }

private:
  struct entry {
    caf::strong_actor_ptr requester;
    caf::message_id mid;
    parameter_destination::target in_place;
  };

  /// What a response promise does, from a thread of our own: the answer goes straight into the
  /// requester's mailbox, tagged as the response to its request.
  static void respond(entry& e, caf::message msg) {
    if (e.requester) e.requester->enqueue(nullptr, e.mid.response_id(), std::move(msg), nullptr);
  }

  std::mutex mutex_;
  std::map<uint64_t, entry> waiting_;
  bool broken_ = false;
  caf::error reason_;
};

/// Reads a record in shared memory front to back into the parts asked for: one copy of ours,
/// counted.
read_parts copy_out_of(const wire_buffer& record) {
  return [record, at = std::size_t{0}](iovec* parts, int count) mutable -> caf::error {
    for (int i = 0; i < count; ++i) {
      if (parts[i].iov_len > record.size_bytes() - at)
        return make_error(errc::malformed_message, "a reply shorter than its segments");
      std::memcpy(parts[i].iov_base, record.bytes() + at, parts[i].iov_len);
      at += parts[i].iov_len;
      copied_payload_bytes += parts[i].iov_len;
    }
    return {};
  };
}

/// Reads answers until the link ends, then fails whatever still waits. A transport problem reads
/// to the requester as a request to a shard that died (sec::request_receiver_down), which is what
/// a worker in one process sees when its shard is gone.
/// A reply to a pull or push_pull is read straight into the worker's parameters, or the
/// caller's buffer, when the request was sent with a place for it (parameter_destination.hpp);
/// the requester then gets the message's structure, whose blocks point at their places, and its
/// scatter finds nothing to copy. A reply in shared memory goes the same way, copied out of its
/// record once (counted) into its place, or handed on as the record itself (no copy) when it
/// has none.
void read_answers(std::shared_ptr<link_socket> link, std::shared_ptr<pending_requests> pending,
                  std::shared_ptr<const shm_inbox> inbox, std::string where) {
  auto lost = [&](const caf::error& err) {
    link->shutdown();
    pending->break_all(caf::make_error(caf::sec::request_receiver_down, where + ": " + describe(err)));
  };
  for (;;) {
    frame_header h;
    if (auto err = link->receive_header(h)) return lost(err);
    if (auto why = check_header(h); !why.empty()) return lost(make_error(errc::malformed_message, why));
    if (in_region(h)) {
      auto record = inbox ? inbox->take(h.a, h.size)
                          : caf::expected<wire_buffer>{make_error(
                              errc::malformed_message, "a reply in shared memory on a link without it")};
      if (!record) {
        log_line(log_level::warn, "data link", where + ": " + describe(record.error()) + "; link closed");
        return lost(record.error());
      }
      if (auto target = pending->in_place(h.id)) {
        wire_buffer structure;
        caf::expected<shard_parameters_view> view{caf::none};
        auto into = [&](float* flat) {
          view = receive_parameters_into(copy_out_of(*record), h.size, *target.layout, flat,
                                         structure);
        };
        // A caller's borrowed buffer closed (its call ended) takes nothing: handed on as is.
        if (target.params ? (into(target.params->data()), true) : target.output->write(into)) {
          if (!view) {
            pending->answer(h.id, caf::make_message(view.error()));
            return lost(view.error());
          }
          pending->answer(h.id, caf::make_message(std::move(structure)));
          continue;
        }
      }
      pending->answer(h.id, caf::make_message(std::move(*record)));
      continue;
    }
    switch (static_cast<frame_kind>(h.kind)) {
      case frame_kind::reply: {
        if (auto target = pending->in_place(h.id)) {
          wire_buffer structure;
          caf::expected<shard_parameters_view> view{caf::none};
          auto into = [&](float* flat) {
            view = receive_parameters_into(*link, h, *target.layout, flat, structure);
          };
          // A caller's borrowed buffer closed (its call ended) takes nothing: received apart.
          if (target.params ? (into(target.params->data()), true) : target.output->write(into)) {
            if (!view) {  // the requester hears why; the stream is out of step: the link ends
              pending->answer(h.id, caf::make_message(view.error()));
              return lost(view.error());
            }
            pending->answer(h.id, caf::make_message(std::move(structure)));
            break;
          }
        }
        auto reply = link->receive_buffer(h);
        if (!reply) return lost(reply.error());
        pending->answer(h.id, caf::make_message(std::move(*reply)));
        break;
      }
      case frame_kind::failure: {  // the shard's own answer (a refused push, say)
        caf::error carried;
        if (auto err = link->receive_failure(h, carried)) return lost(err);
        pending->answer(h.id, caf::make_message(std::move(carried)));
        break;
      }
      default:
        return lost(make_error(errc::malformed_message,
                               "a frame of kind " + std::to_string(h.kind) + " as an answer"));
    }
  }
}

struct proxy_state {
  static inline const char* name = "shard_proxy";
  uint64_t next_id = 1;
};

/// Speaks ps_shard_actor for a local worker or evaluator: pulls, push_pulls and snapshots are
/// written to the link (several may be in flight) and answered by the reader thread; everything
/// else goes to the shard itself over CAF. Detached: a send blocks while the socket is full.
/// With shared memory (`ring` and `inbox`), a payload goes into the request ring and only its
/// header on the link.
caf::behavior shard_proxy(caf::stateful_actor<proxy_state>* self, ps_shard_actor remote,
                          std::shared_ptr<link_socket> link,
                          std::shared_ptr<parameter_destination> destination,
                          std::shared_ptr<shm_ring> ring, std::shared_ptr<const shm_inbox> inbox,
                          std::string where) {
  auto pending = std::make_shared<pending_requests>();
  auto reader = std::make_shared<std::thread>(read_answers, link, pending, std::move(inbox), where);
  self->attach_functor([link, reader] {  // by value: the state is gone when this runs
    link->shutdown();
    reader->join();
  });
  auto send = [=](frame_kind kind, int64_t a, int64_t b, const wire_buffer* payload) {
    auto id = self->state.next_id++;
    auto mid = self->take_current_message_id();  // answered by the reader thread
    // Its reply's place: the requester's next queued one, else the worker's (destination.hpp).
    parameter_destination::target in_place;
    if (kind == frame_kind::pull || kind == frame_kind::push_pull) {
      const auto& sender = self->current_sender();
      in_place = destination->take(sender ? sender->id() : 0);
    }
    if (auto gone = pending->add(id, self->current_sender(), mid, std::move(in_place))) {
      if (auto& requester = self->current_sender())  // the link is gone: answer at once
        requester->enqueue(nullptr, mid.response_id(), caf::make_message(std::move(gone)), nullptr);
      return;
    }
    auto h = make_header(kind, id, a, b);
    if (ring && payload && payload->size_bytes() > 0) {
      if (auto offset = ring->place(*payload); offset >= 0) {
        h.kind |= in_region_bit;
        h.a = offset;
        h.size = payload->size_bytes();
        payload = nullptr;  // in the ring: only the header goes on the link
      }
    }
    // A push built by reference leaves from the worker's gradient, one iovec per block.
    if (payload ? link->send(h, *payload) : link->send(h))
      link->shutdown();  // the reader thread sees the end and fails what waits, this one too
  };
  return {
    [=](push_pull_atom, const wire_buffer& push) { send(frame_kind::push_pull, 0, 0, &push); },
    [=](pull_atom, int32_t worker, int64_t clock) { send(frame_kind::pull, worker, clock, nullptr); },
    [=](snapshot_atom) { send(frame_kind::snapshot, 0, 0, nullptr); },
    [=](pull_atom, const wire_buffer& pull) { send(frame_kind::keyed_pull, 0, 0, &pull); },
    [=](snapshot_atom, const wire_buffer& pull) { send(frame_kind::keyed_snapshot, 0, 0, &pull); },
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
    [=](checkpoint_atom a, int64_t c) { return self->delegate(remote, a, c); },
  };
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
  if (!err)
    err = link.send_with_fds(make_header(frame_kind::shm_offer, 0, int64_t(shm_ring_bytes),
                                         int64_t(shm_ring_bytes)),
                             fds, 2);
  close_fds();
  frame_header h;
  if (!err) err = link.receive_header(h);
  if (!err && !check_header(h).empty()) err = make_error(errc::malformed_message, check_header(h));
  if (!err && static_cast<frame_kind>(h.kind) == frame_kind::failure) {
    caf::error refused;
    err = link.receive_failure(h, refused);
    if (!err) err = std::move(refused);
  } else if (!err && (static_cast<frame_kind>(h.kind) != frame_kind::reply || h.size != 0)) {
    err = make_error(errc::malformed_message, "no answer to the offer");
  }
  if (err) return err;
  return shm_link{shm_ring{std::move(*requests)}, shm_inbox{std::move(*replies)}};
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
  // shared memory unless TLS is on; else TCP. --data-link may force one of them.
  const auto path = configured_data_link_path();
  const auto tls = configured_tls(sys.config());
  if (path == data_link_path::shm && tls.enabled())
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           "--data-link shm: shared memory is not offered with TLS");
  caf::expected<std::shared_ptr<link_socket>> link{caf::error{}};
  if (path != data_link_path::tcp) link = connect_local_link(local_name);
  if (!link && path != data_link_path::automatic && path != data_link_path::tcp)
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           std::string("--data-link ") + data_link_path_name(path)
                             + ": the local socket of shard " + std::to_string(index)
                             + " is not reachable (" + describe(link.error()) + ")");
  bool shared_memory = link && !tls.enabled()
                       && (path == data_link_path::automatic || path == data_link_path::shm);
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
  frame_header h;
  link->set_receive_timeout(request_timeout);  // for the hello's answer
  auto hello = link->send(make_header(frame_kind::hello, 0, index, request_timeout.count()));
  if (!hello) hello = link->receive_header(h);
  if (!hello && !check_header(h).empty()) hello = make_error(errc::malformed_message, check_header(h));
  if (!hello && static_cast<frame_kind>(h.kind) == frame_kind::failure) {
    caf::error refused;
    hello = link->receive_failure(h, refused);
    if (!hello) hello = std::move(refused);
  } else if (!hello && static_cast<frame_kind>(h.kind) != frame_kind::reply)
    hello = make_error(errc::malformed_message, "no hello reply");
  if (hello) {
    link->shutdown();
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           "data link of shard " + std::to_string(index) + " at " + link->peer()
                             + ": " + describe(hello));
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
  auto proxy = sys.spawn<caf::detached>(shard_proxy, shard, link, destination, ring, inbox,
                                        std::move(where));
  remote_shard out{caf::actor_cast<ps_shard_actor>(proxy), shard, std::move(link), {},
                   std::move(destination)};
  out.shared_memory = ring != nullptr;
  return out;
}

} // namespace actorps
