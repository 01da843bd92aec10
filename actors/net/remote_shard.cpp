#include "actors/net/remote_shard.hpp"

#include "actors/net/connect.hpp"
#include "actors/net/receive_in_place.hpp"
#include "actors/net/tls_config.hpp"
#include "actors/protocol/errors.hpp"

#include <caf/all.hpp>

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
  /// `in_place`: its reply is the shard's dense parameters, for the destination.
  caf::error add(uint64_t id, caf::strong_actor_ptr requester, caf::message_id mid,
                 bool in_place) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (broken_) return reason_;
    waiting_.emplace(id, entry{std::move(requester), mid, in_place});
    return {};
  }

  /// Whether request `id` waits and wants its reply received in place.
  bool in_place(uint64_t id) {
    std::lock_guard<std::mutex> guard{mutex_};
    auto i = waiting_.find(id);
    return i != waiting_.end() && i->second.in_place;
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
    bool in_place = false;
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

/// Reads answers until the link ends, then fails whatever still waits. A transport problem reads
/// to the requester as a request to a shard that died (sec::request_receiver_down), which is what
/// a worker in one process sees when its shard is gone.
/// A reply to a pull or push_pull is read straight into the worker's parameters when it has said
/// where they are (`destination`); the worker then gets the message's structure, whose blocks
/// point at their places, and its scatter finds nothing to copy.
void read_answers(std::shared_ptr<link_socket> link, std::shared_ptr<pending_requests> pending,
                  std::shared_ptr<parameter_destination> destination, std::string where) {
  auto lost = [&](const caf::error& err) {
    link->shutdown();
    pending->break_all(caf::make_error(caf::sec::request_receiver_down, where + ": " + describe(err)));
  };
  for (;;) {
    frame_header h;
    if (auto err = link->receive_header(h)) return lost(err);
    if (auto why = check_header(h); !why.empty()) return lost(make_error(errc::malformed_message, why));
    switch (static_cast<frame_kind>(h.kind)) {
      case frame_kind::reply: {
        if (auto target = destination->get(); target && pending->in_place(h.id)) {
          wire_buffer structure;
          auto view = receive_parameters_into(*link, h, *target.layout, target.params->data(),
                                              structure);
          if (!view) {  // the requester hears why; the stream is out of step: the link ends
            pending->answer(h.id, caf::make_message(view.error()));
            return lost(view.error());
          }
          pending->answer(h.id, caf::make_message(std::move(structure)));
          break;
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
caf::behavior shard_proxy(caf::stateful_actor<proxy_state>* self, ps_shard_actor remote,
                          std::shared_ptr<link_socket> link,
                          std::shared_ptr<parameter_destination> destination, std::string where) {
  auto pending = std::make_shared<pending_requests>();
  auto reader = std::make_shared<std::thread>(read_answers, link, pending, destination, where);
  self->attach_functor([link, reader] {  // by value: the state is gone when this runs
    link->shutdown();
    reader->join();
  });
  auto send = [=](frame_kind kind, int64_t a, int64_t b, const wire_buffer* payload) {
    auto id = self->state.next_id++;
    auto mid = self->take_current_message_id();  // answered by the reader thread
    bool dense_parameters = kind == frame_kind::pull || kind == frame_kind::push_pull;
    if (auto gone = pending->add(id, self->current_sender(), mid, dense_parameters)) {
      if (auto& requester = self->current_sender())  // the link is gone: answer at once
        requester->enqueue(nullptr, mid.response_id(), caf::make_message(std::move(gone)), nullptr);
      return;
    }
    auto h = make_header(kind, id, a, b);
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

  // The shard's local socket when it is on this host (and in this network namespace), else TCP.
  auto link = connect_local_link(local_name);
  if (!link)
    link = connect_link(addr.host, port,
                        std::chrono::duration_cast<std::chrono::milliseconds>(connect_timeout));
  if (!link) return std::move(link.error());
  auto attached = attach_link(sys, shard, std::move(*link), index, request_timeout,
                              configured_tls(sys.config()));
  if (attached) attached->task = *task;
  return attached;
}

caf::expected<remote_shard> attach_link(caf::actor_system& sys, ps_shard_actor shard,
                                        std::shared_ptr<link_socket> link, int32_t index,
                                        std::chrono::milliseconds request_timeout,
                                        const tls_files& tls) {
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
  link->set_receive_timeout(std::chrono::milliseconds{0});  // answers may be held for long
  auto where = "shard " + std::to_string(index) + " (data link to " + link->peer() + ")";
  auto destination = std::make_shared<parameter_destination>();
  auto proxy = sys.spawn<caf::detached>(shard_proxy, shard, link, destination, std::move(where));
  return remote_shard{caf::actor_cast<ps_shard_actor>(proxy), shard, std::move(link), {},
                      std::move(destination)};
}

} // namespace actorps
