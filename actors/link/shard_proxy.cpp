#include "actors/link/shard_proxy.hpp"

#include "actors/link/link_verbs.hpp"
#include "actors/link/receive_in_place.hpp"
#include "actors/link/record_reader.hpp"
#include "actors/link/reply_part.hpp"
#include "actors/link/short_slice.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"

#include <caf/all.hpp>

#include <map>
#include <mutex>
#include <optional>
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
/// counted. A record of pieces (shm_region.hpp) reads as the bytes of its pieces in order.
read_parts copy_out_of(const wire_buffer& record) {
  return [reader = record_reader{record}](iovec* parts, int count) mutable -> caf::error {
    if (!reader.read(parts, count))
      return make_error(errc::malformed_message, "a reply shorter than its segments");
    for (int i = 0; i < count; ++i) copied_payload_bytes += parts[i].iov_len;
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
/// has none. A reply in parts (reply_part.hpp) is read into its place part by part as the shard
/// sends them, while it still applies the push.
void read_answers(std::shared_ptr<link_socket> link, std::shared_ptr<pending_requests> pending,
                  std::shared_ptr<const shm_inbox> inbox, std::shared_ptr<shm_ring> ring,
                  std::string where) {
  request_short_slice();
  auto lost = [&](const caf::error& err) {
    link->shutdown();
    pending->break_all(caf::make_error(caf::sec::request_receiver_down, where + ": " + describe(err)));
  };
  auto bad_record = [&](const caf::error& err) {
    log_line(log_level::warn, "data link", where + ": " + describe(err) + "; link closed");
    return err;
  };
  auto take = [&](const frame_header& h) -> caf::expected<wire_buffer> {
    if (!inbox)
      return make_error(errc::malformed_message, "a reply in shared memory on a link without it");
    return inbox->take(h.a, h.size, h.b);
  };
  // Reads an answer whole into a message of its own (not into place) and hands it on.
  auto answer_whole = [&](const frame_header& h) -> caf::error {
    const auto kind = kind_of(h.kind);
    if (kind == frame_kind::reply) {
      auto reply = in_region(h) ? take(h) : link->receive_buffer(h);
      if (!reply) return in_region(h) ? bad_record(reply.error()) : reply.error();
      pending->answer(h.id, caf::make_message(std::move(*reply)));
      return {};
    }
    if (kind == frame_kind::failure) {  // the shard's own answer (a refused push, say)
      caf::error carried;
      if (auto err = link->receive_failure(h, carried)) return err;
      pending->answer(h.id, caf::make_message(std::move(carried)));
      return {};
    }
    // Anything else is no answer read whole: a request (a row of the verb table, which a new
    // request kind is, and nothing here), the parts of a reply taken in place, or no kind.
    return make_error(errc::malformed_message,
                      "a frame of kind " + std::to_string(h.kind) + " as an answer");
  };
  // Reads a reply into its place with `read`, from wherever it lies; false when it has none.
  auto into_place = [&](const frame_header& h, uint64_t size, const read_parts& read,
                        caf::expected<shard_parameters_view>& view, wire_buffer& structure) {
    auto target = pending->in_place(h.id);
    if (!target) return false;
    auto into = [&](float* flat) {
      view = receive_parameters_into(read, size, *target.layout, flat, structure);
    };
    // A caller's borrowed buffer closed (its call ended) takes nothing.
    return target.params ? (into(target.params->data()), true) : target.output->write(into);
  };
  std::optional<frame_header> next;  // a frame's header read already (it ended a reply in parts)
  for (;;) {
    frame_header h;
    if (next) {
      h = *next;
      next.reset();
    } else {
      if (auto err = link->receive_header(h)) return lost(err);
      if (auto why = check_header(h); !why.empty())
        return lost(make_error(errc::malformed_message, why));
      // An answer means the shard has most likely released the request's record: the push's
      // lease goes now, before the worker's next step asks for its gradient buffer back.
      if (ring) ring->reclaim();
    }
    const auto kind = kind_of(h.kind);
    caf::expected<shard_parameters_view> view{caf::none};
    wire_buffer structure;
    if (kind == frame_kind::reply_part) {
      reply_part_reader parts{*link, inbox.get(), answer_whole};
      if (auto err = parts.begin(h)) return lost(in_region(h) ? bad_record(err) : err);
      auto read = [&](iovec* p, int count) { return parts.read(p, count); };
      caf::error failed;
      if (into_place(h, parts.total(), read, view, structure)) {
        if (!view) failed = view.error();
      } else {  // into a buffer of its own
        auto words = wire_buffer::allocate(parts.total() / sizeof(capnp::word));
        iovec all{words.get(), parts.total()};
        failed = parts.read(&all, 1);
        structure = wire_buffer{std::move(words), parts.total() / sizeof(capnp::word)};
      }
      if (parts.ended_by()) {  // the shard answered otherwise after all: that answer counts
        next = parts.ended_by();
        continue;
      }
      if (failed) {  // the requester hears why; the link ends
        pending->answer(h.id, caf::make_message(failed));
        return lost(failed);
      }
      pending->answer(h.id, caf::make_message(std::move(structure)));
      continue;
    }
    if (kind == frame_kind::reply && in_region(h)) {
      auto record = take(h);
      if (!record) return lost(bad_record(record.error()));
      if (into_place(h, record->size_bytes(), copy_out_of(*record), view, structure)) {
        if (!view) {
          pending->answer(h.id, caf::make_message(view.error()));
          return lost(view.error());
        }
        *record = wire_buffer{};  // copied out: the record goes back to the shard now
        pending->answer(h.id, caf::make_message(std::move(structure)));
        continue;
      }
      pending->answer(h.id, caf::make_message(std::move(*record)));
      continue;
    }
    if (kind == frame_kind::reply) {
      auto read = [&](iovec* p, int count) { return link->receive_parts(p, count); };
      if (into_place(h, h.size, read, view, structure)) {
        if (!view) {  // the requester hears why; the stream is out of step: the link ends
          pending->answer(h.id, caf::make_message(view.error()));
          return lost(view.error());
        }
        pending->answer(h.id, caf::make_message(std::move(structure)));
        continue;
      }
    }
    if (auto err = answer_whole(h)) return lost(err);
  }
}

/// Puts requests on the link: registers each with the reader's table, then writes its header
/// (and its payload: into the ring with shared memory, else after the header). One caller at a
/// time.
class request_writer {
public:
  request_writer(std::shared_ptr<link_socket> link,
                 std::shared_ptr<parameter_destination> destination,
                 std::shared_ptr<shm_ring> ring, std::shared_ptr<pending_requests> pending)
    : link_(std::move(link)), destination_(std::move(destination)), ring_(std::move(ring)),
      pending_(std::move(pending)) {}

  /// Sends one request of `requester` (null: no one waits for the answer) tagged `mid`.
  void send(frame_kind kind, int64_t a, int64_t b, const wire_buffer* payload,
            const caf::strong_actor_ptr& requester, caf::message_id mid) {
    auto id = next_id_++;
    // Its reply's place: the requester's next queued one, else the worker's (destination.hpp).
    parameter_destination::target in_place;
    if (verb_of(kind)->reply == link_reply::in_place)
      in_place = destination_->take(requester ? requester->id() : 0);
    if (auto gone = pending_->add(id, requester, mid, std::move(in_place))) {
      if (requester)  // the link is gone: answer at once
        requester->enqueue(nullptr, mid.response_id(), caf::make_message(std::move(gone)), nullptr);
      return;
    }
    auto h = make_header(kind, id, a, b);
    if (ring_ && payload && payload->size_bytes() > 0) {
      if (auto placed = ring_->place(*payload); placed.offset >= 0) {
        h.kind |= in_region_bit;
        h.a = placed.offset;
        h.b = placed.pieces;
        h.size = placed.size;
        payload = nullptr;  // in the ring: only the header goes on the link
      }
    }
    // A push built by reference leaves from the worker's gradient, one iovec per block.
    if (payload ? link_->send(h, *payload) : link_->send(h))
      link_->shutdown();  // the reader thread sees the end and fails what waits, this one too
  }

  /// Sends `msg` when it is a request the link carries (a pull, push_pull or snapshot, dense
  /// or keyed) and returns true; false for anything else.
  bool send_if_request(const caf::type_erased_tuple& msg, const caf::strong_actor_ptr& requester,
                       caf::message_id mid) {
    auto call = link_call_of(msg);
    if (!call) return false;
    send(*call, requester, mid);
    return true;
  }

  void send(const link_call& call, const caf::strong_actor_ptr& requester, caf::message_id mid) {
    send(call.kind, call.a, call.b, call.payload, requester, mid);
  }

private:
  std::shared_ptr<link_socket> link_;
  std::shared_ptr<parameter_destination> destination_;
  std::shared_ptr<shm_ring> ring_;
  std::shared_ptr<pending_requests> pending_;
  uint64_t next_id_ = 1;
};

/// Ends the reader thread once its link is shut down: joins it, or, when this runs on the
/// reader itself (a reply it delivered dropped the last reference to its proxy), lets it end
/// on its own: it holds everything it uses, and joining itself would throw (EDEADLK).
void end_reader(std::thread& reader) {
  if (reader.get_id() == std::this_thread::get_id())
    reader.detach();
  else
    reader.join();
}

/// The link's reader thread, started at once; shut down and ended (end_reader) by whoever ends
/// the proxy.
std::shared_ptr<std::thread> start_reader(std::shared_ptr<link_socket> link,
                                          std::shared_ptr<pending_requests> pending,
                                          std::shared_ptr<const shm_inbox> inbox,
                                          std::shared_ptr<shm_ring> ring, std::string where) {
  return std::make_shared<std::thread>(read_answers, std::move(link), std::move(pending),
                                       std::move(inbox), std::move(ring), std::move(where));
}

struct proxy_state {
  static inline const char* name = "shard_proxy";
};

/// The detached proxy (a link without shared memory): requests are sent from its own thread,
/// where a send may block while the socket is full. It speaks ps_shard_actor, every signature
/// of it (the compiler checks): the link's verbs go on the link, the rest to the shard over CAF.
ps_shard_actor::behavior_type detached_proxy(ps_shard_actor::stateful_pointer<proxy_state> self,
                                             ps_shard_actor remote,
                                             std::shared_ptr<link_socket> link,
                                             std::shared_ptr<parameter_destination> destination,
                                             std::string where) {
  auto pending = std::make_shared<pending_requests>();
  auto reader = start_reader(link, pending, nullptr, nullptr, where);
  self->attach_functor([link, reader] {  // by value: the state is gone when this runs
    link->shutdown();
    end_reader(*reader);
  });
  auto writer = std::make_shared<request_writer>(link, std::move(destination), nullptr, pending);
  auto send = [=](const link_call& call) {
    auto mid = self->take_current_message_id();  // answered by the reader thread
    writer->send(call, self->current_sender(), mid);
    return caf::delegated<wire_buffer>{};
  };
  return std::apply(
    [&](auto... verbs) -> ps_shard_actor::behavior_type {
      return {
        verbs...,
        // Everything else goes to the shard itself, over CAF.
        [=](init_atom a, const wire_buffer& x) { return self->delegate(remote, a, x); },
        [=](restore_atom a, const wire_buffer& x, const std::vector<uint32_t>& y) {
          return self->delegate(remote, a, x, y);
        },
        [=](restore_atom a, resize_atom b, const wire_buffer& x,
            const std::vector<wire_buffer>& p, const std::vector<uint32_t>& y) {
          return self->delegate(remote, a, b, x, p, y);
        },
        [=](resize_atom a, int64_t c, const std::vector<uint16_t>& p,
            const std::vector<uint16_t>& b) { return self->delegate(remote, a, c, p, b); },
        [=](resize_atom a, copy_atom b, int64_t c, const std::vector<uint16_t>& p, uint64_t n) {
          return self->delegate(remote, a, b, c, p, n);
        },
        [=](resize_atom a, copy_atom b, const wire_buffer& x) {
          return self->delegate(remote, a, b, x);
        },
        [=](stats_atom a) { return self->delegate(remote, a); },
        [=](leave_atom a, int32_t w) { self->send(remote, a, w); },
        [=](done_atom a, int32_t w) { return self->delegate(remote, a, w); },
        [=](rejoin_atom a, int32_t w) { return self->delegate(remote, a, w); },
        [=](admit_atom a, int32_t w, int64_t c, uint32_t i) { return self->delegate(remote, a, w, c, i); },
        [=](checkpoint_atom a, const std::string& d, int64_t c) { return self->delegate(remote, a, d, c); },
        [=](checkpoint_atom a, int64_t c) { return self->delegate(remote, a, c); },
        [=](checkpoint_atom a, const std::string& d, int64_t c, int64_t s) {
          return self->delegate(remote, a, d, c, s);
        },
        [=](checkpoint_atom a, int64_t c, int64_t s) { return self->delegate(remote, a, c, s); },
        [=](checkpoint_atom a, snapshot_atom b, int64_t c, int64_t s) {
          return self->delegate(remote, a, b, c, s);
        },
        [=](checkpoint_atom a, commit_atom b, int64_t c, int64_t n) {
          self->send(remote, a, b, c, n);
        },
        [=](replicate_atom a, const wire_buffer& x) { return self->delegate(remote, a, x); },
        [=](replicate_atom a, leave_atom b, int32_t w) { return self->delegate(remote, a, b, w); },
        [=](replicate_atom a, rejoin_atom b, int32_t w) { return self->delegate(remote, a, b, w); },
        [=](replicate_atom a, admit_atom b, int32_t w, int64_t c, uint32_t i) {
          return self->delegate(remote, a, b, w, c, i);
        },
        [=](replicate_atom a, const replica_image& x) { return self->delegate(remote, a, x); },
        [=](backup_atom a, const caf::strong_actor_ptr& x) { return self->delegate(remote, a, x); },
        [=](promote_atom a) { return self->delegate(remote, a); },
        [=](evict_atom) {},  // a shard's to itself: nothing a proxy passes on
      };
    },
    link_verb_handlers(send));
}

/// The proxy of a link with shared memory: no mailbox and no thread of its own for sending.
/// A request is written to the ring and the link in enqueue, on the requester's thread (under
/// a mutex: several actors may hold the handle); anything else is handed to the shard as it
/// is (its sender and message id kept, as delegate does), so the shard answers the requester.
class inline_proxy final : public caf::monitorable_actor {
public:
  inline_proxy(caf::actor_config& cfg, ps_shard_actor remote, std::shared_ptr<link_socket> link,
               std::shared_ptr<parameter_destination> destination, std::shared_ptr<shm_ring> ring,
               std::shared_ptr<const shm_inbox> inbox, std::string where)
    : caf::monitorable_actor(cfg), remote_(std::move(remote)), link_(link), where_(where) {
    auto pending = std::make_shared<pending_requests>();
    reader_ = start_reader(link, pending, std::move(inbox), ring, std::move(where));
    writer_.emplace(std::move(link), std::move(destination), std::move(ring), std::move(pending));
  }

  ~inline_proxy() override {
    link_->shutdown();
    end_reader(*reader_);
  }

  const char* name() const override { return "shard_proxy"; }

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    auto& msg = what->content();
    if (msg.match_elements<caf::exit_msg>()) {
      auto reason = msg.get_as<caf::exit_msg>(0).reason;
      link_->shutdown();  // the reader fails what waits
      cleanup(std::move(reason), host);
      return;
    }
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (closed_)
        return bounce(what, caf::make_error(caf::sec::request_receiver_down, where_ + ": closed"));
      if (writer_->send_if_request(msg, what->sender, what->mid)) return;
    }
    caf::actor_cast<caf::abstract_actor*>(remote_)->enqueue(std::move(what), host);
  }

protected:
  void on_cleanup(const caf::error& reason) override {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      closed_ = true;
    }
    caf::monitorable_actor::on_cleanup(reason);
  }

private:
  ps_shard_actor remote_;
  std::shared_ptr<link_socket> link_;
  std::string where_;
  std::shared_ptr<std::thread> reader_;
  std::mutex mutex_;
  std::optional<request_writer> writer_;
  bool closed_ = false;
};

} // namespace

ps_shard_actor spawn_shard_proxy(caf::actor_system& sys, ps_shard_actor remote,
                                 std::shared_ptr<link_socket> link,
                                 std::shared_ptr<parameter_destination> destination,
                                 std::shared_ptr<shm_ring> ring,
                                 std::shared_ptr<const shm_inbox> inbox, std::string where) {
  if (!ring)
    return sys.spawn<caf::detached>(detached_proxy, std::move(remote), std::move(link),
                                    std::move(destination), std::move(where));
  caf::actor_config cfg;
  auto proxy = caf::make_actor<inline_proxy, caf::strong_actor_ptr>(
    sys.next_actor_id(), sys.node(), &sys, cfg, std::move(remote), std::move(link),
    std::move(destination), std::move(ring), std::move(inbox), std::move(where));
  return caf::actor_cast<ps_shard_actor>(std::move(proxy));
}

} // namespace actorps
