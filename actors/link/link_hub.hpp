// The state of every data connection of one ps process: accepting, the hello, frames read into
// requests for the shard, replies written back, and every limit of link_limits.hpp. The shard is
// asked through `ask`, in each connection's order. The event loop's thread does everything but
// the answers: answer() is called on the thread that has the shard's answer (a CAF thread),
// which writes the reply with a non-blocking send itself instead of posting it to the loop —
// one thread hand-off (and wake-up of the loop) fewer a request. One mutex guards the state;
// neither side blocks while holding it. Only the loop's thread adds or forgets descriptors in
// the loop (a connection broken by an answer's send is closed there).
//
//   accepted ──(TLS handshake)──hello naming this shard──▶ serving ──peer closes / breaks──▶ closed
//      │  handshake failed, silent past the hello       │  bad or oversize frame, a reply where a
//      │  timeout, anything but a hello, a hello with   │  request belongs: refused (logged,
//      │  every served place taken: refused             │  counted)
//      └─ its place taken by a newer one when the strangers' pool is full: evicted
// Until its hello is answered a connection is a stranger, in a pool of its own
// (link_limits.hpp): strangers never take the place of a client served, nor keep one out.
// On a plain local socket the client may then offer shared memory (shm_offer with two memfds:
// shm_region.hpp); from then on payloads may lie in its rings, their offsets and sizes checked
// (a bad one refuses the connection like a bad header). Each link's path is logged at its first
// request. With TLS, a request the peer's certificate may not make (link_authorisation.hpp) is answered
// with a not_authorised failure frame, counted and logged; the connection goes on.
//
// With TLS, a client that reached the shard's local socket (same host, same network namespace)
// may skip the cipher: over its TLS connection it asks for a one-time ticket (local_ticket), 32
// random bytes that only that connection carried, and says hello with it on the proven local
// socket (serve_proven_local), a plain one. The ticket's identity, the one the certificate
// proved, is then the connection's, and every request is checked against it as over TLS; it may
// offer shared memory. A hello there without a live ticket is refused, counted (unproven) and
// logged: every task of a host shares one user id, so the socket's peer credentials prove
// nothing, only the ticket does.
#pragma once

#include "actors/link/event_loop.hpp"
#include "actors/link/link_connection.hpp"
#include "actors/link/link_limits.hpp"
#include "actors/protocol/rate_limited_log.hpp"
#include "actors/protocol/request_progress.hpp"

#include <array>
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

namespace actorps {

/// A request read from a connection, for the shard; its answer goes to answer(ticket, ...).
/// The hub itself holds the client's request timeout (its timer), not the asker: a request with
/// a timeout in CAF wakes CAF's clock thread to register it, once per request.
struct link_request {
  uint64_t ticket = 0;
  frame_kind kind = frame_kind::pull;
  int64_t a = 0;
  int64_t b = 0;
  wire_buffer payload;
  /// A push_pull handed on while it is still read (request_progress.hpp), else null.
  request_progress_ptr progress = nullptr;
};

class link_hub {
public:
  struct hooks {
    std::function<void(link_request&&)> ask;  ///< hand a request to the shard
    std::function<void()> learn_limit;        ///< find the frame limit; answered by limit_learned
    /// Tell the shard that more of a push it was handed still arriving is in, or that the rest
    /// will never come (request_progress.hpp).
    std::function<void(request_progress_ptr)> progress = {};
    /// The stream of an accepted socket (tls_stream.hpp); empty: the plain socket. A stream
    /// that authenticates its peer has every request checked against the peer's identity.
    std::function<std::unique_ptr<byte_stream>(int fd)> make_stream = {};
  };

  /// Serves the listening sockets `tcp_fd` and `local_fd` (-1: none), which stay the caller's.
  link_hub(event_loop& loop, int tcp_fd, int local_fd, int32_t shard_index, link_limits limits,
           hooks h, std::function<void(const std::string&)> log);
  ~link_hub();

  /// Before start(): also serves the plain local socket `fd` (which stays the caller's), named
  /// `name`, for clients proven by a ticket (the TLS streams' hub only).
  void serve_proven_local(int fd, std::string name);

  // On the loop's thread:
  void start();
  void on_timer();
  /// The frame limit found, or nullopt when the shard could not say (not initialised yet).
  void limit_learned(std::optional<std::size_t> limit);

  // From any thread:
  /// The shard's answer to the request of `ticket` (timed out or its client gone by now,
  /// perhaps): queued and sent as far as the socket takes it now; the loop sends the rest.
  void answer(uint64_t ticket, const caf::expected<wire_buffer>& reply);
  /// Bytes [from, to) of the shard's reply to the request of `ticket`, sent ahead of its answer
  /// (reply_stream.hpp) as a reply_part frame; dropped once the request is answered or timed
  /// out. Once the parts reach the reply's end they are the answer: answer() then sends nothing.
  void answer_part(uint64_t ticket, const wire_buffer& reply, std::size_t from, std::size_t to);
  /// reply_part frames sent (for tests and the benchmark).
  std::size_t parts_sent() const { return parts_sent_.load(); }
  /// Ends every connection (their clients see the link break); answers after it find none.
  void close_all();
  std::size_t refused() const { return refused_.load(); }
  /// Requests refused because the peer's certificate may not make them (link_authorisation.hpp).
  std::size_t unauthorised() const { return unauthorised_.load(); }
  std::size_t connections() const { return open_.load(); }
  /// Hellos on the proven local socket without a live ticket (counted in refused() too).
  std::size_t unproven() const { return unproven_.load(); }
  /// Strangers closed to make room for a newer connection (counted in refused() too).
  std::size_t evicted() const { return evicted_.load(); }
  std::size_t frame_limit() const { return frame_limit_.load(); }

private:
  struct session;

  void on_listener(int listener, uint32_t events);
  bool shed_one(int listener);
  void pause_accepting();
  void admit(int fd, bool proving);
  void refuse_at_once(int fd, const std::string& peer);
  void make_room(const std::string& address);
  uint64_t victim_among(const std::string& address);
  void evict(session& s, const std::string& why);
  void heard_from(session& s);
  void forget_stranger(session& s);
  caf::error over_limit() const;
  void on_event(uint64_t id, uint32_t events);
  void read_from(session& s);
  bool handle(session& s, const frame_header& h, wire_buffer&& payload);
  std::size_t pause_after(const session& s) const;
  bool may_hand_on(const session& s) const;
  void hand_on_partial(session& s);
  bool streamed_frame_read(session& s, const frame_header& h, wire_buffer&& payload);
  uint64_t expect_answer(const session& s, uint64_t client_id);
  bool accept_shm(session& s, const frame_header& h);
  bool issue_ticket(session& s, const frame_header& h);
  bool redeem(session& s, const wire_buffer& ticket);
  bool checked(const session& s) const;
  std::string path_of(const session& s) const;
  void send_pending(session& s);
  void queue_payload(session& s, frame_kind kind, uint64_t id, const wire_buffer& payload);
  void flush_answer(session& s);
  void update(session& s);
  bool may_read(const session& s) const;
  bool over_totals() const;
  void refuse(session& s, const std::string& why, const caf::error& tell = caf::error{});
  void close(session& s);
  void end(session& s);
  void rearm();

  std::mutex mutex_;  // the state below; taken by the loop's thread and by answer()
  event_loop& loop_;
  int tcp_fd_;
  int local_fd_;
  int proven_fd_ = -1;
  std::string proven_name_;
  int spare_fd_;  // held for the moment the descriptors run out: see shed_one
  int32_t shard_index_;
  link_limits limits_;
  hooks hooks_;
  rate_limited_log log_;
  std::unordered_map<uint64_t, std::unique_ptr<session>> sessions_;
  // The strangers (connections whose hello is not answered) by address: their ids in the order
  // accepted, those that have sent nothing apart (the first to make room).
  struct strangers_of {
    std::set<uint64_t> silent;
    std::set<uint64_t> heard;
    std::size_t size() const { return silent.size() + heard.size(); }
  };
  std::unordered_map<std::string, strangers_of> strangers_;
  std::size_t stranger_count_ = 0;
  std::size_t served_count_ = 0;  // connections whose hello was answered
  uint64_t next_id_ = 1;
  std::deque<std::pair<event_loop::clock::time_point, uint64_t>> hello_deadlines_;
  std::optional<event_loop::clock::time_point> accept_retry_;
  event_loop::clock::time_point armed_ = event_loop::clock::time_point::max();
  enum class limit_state { unknown, learning, known } limit_state_ = limit_state::unknown;
  std::vector<uint64_t> parked_;  // sessions whose frame waits for the limit
  std::size_t unsent_total_ = 0;   // reply bytes not yet taken by the clients
  std::size_t pending_total_ = 0;  // requests at the shard or answered and unsent
  struct waiting_request {
    uint64_t connection;
    uint64_t client_id;  // the id the client gave it, which its answer carries
    event_loop::clock::time_point deadline;
    bool answered_by_parts = false;  // its reply_parts reached the reply's end
    // A push_pull handed on while still read (request_progress.hpp): a declined one's answer
    // is dropped; one timed out before it is whole fails.
    request_progress_ptr progress = nullptr;
  };
  std::unordered_map<uint64_t, waiting_request> waiting_;  // at the shard, by ticket
  struct local_ticket {
    std::array<unsigned char, local_ticket_secret> secret;
    std::string identity;  // the certificate's CN of the TLS connection that asked for it
    event_loop::clock::time_point expires;
  };
  std::vector<local_ticket> local_tickets_;  // live, the oldest first
  uint64_t next_ticket_ = 1;
  std::atomic<std::size_t> refused_{0};
  std::atomic<std::size_t> unauthorised_{0};
  std::atomic<std::size_t> open_{0};
  std::atomic<std::size_t> evicted_{0};
  std::atomic<std::size_t> unproven_{0};
  std::atomic<std::size_t> parts_sent_{0};
  std::atomic<std::size_t> frame_limit_;
};

} // namespace actorps
