// The state of every data connection of one ps process, kept on the event loop's thread (and
// touched only there): accepting, the hello, frames read into requests for the shard, replies
// written back, and every limit of link_limits.hpp. The shard is asked through `ask`, in each
// connection's order; its answers come back through answer(), posted to the loop.
//
//   accepted ──(TLS handshake)──hello naming this shard──▶ serving ──peer closes / breaks──▶ closed
//      │  handshake failed, silent past the hello       │  bad or oversize frame, a reply where a
//      └─ timeout, anything but a hello: refused ───────┴─ request belongs: refused (logged, counted)
// On a plain local socket the client may then offer shared memory (shm_offer with two memfds:
// shm_region.hpp); from then on payloads may lie in its rings, their offsets and sizes checked
// (a bad one refuses the connection like a bad header). Each link's path is logged at its first
// request. With TLS, a request the peer's certificate may not make (link_authorisation.hpp) is answered
// with a not_authorised failure frame, counted and logged; the connection goes on.
#pragma once

#include "actors/net/event_loop.hpp"
#include "actors/net/link_connection.hpp"
#include "actors/net/link_limits.hpp"
#include "actors/net/rate_limited_log.hpp"

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace actorps {

/// A request read from connection `connection`, for the shard.
struct link_request {
  uint64_t connection = 0;
  uint64_t id = 0;
  frame_kind kind = frame_kind::pull;
  int64_t a = 0;
  int64_t b = 0;
  wire_buffer payload;
  std::chrono::milliseconds timeout{1000};  ///< the client's own request timeout
};

class link_hub {
public:
  struct hooks {
    std::function<void(link_request&&)> ask;  ///< hand a request to the shard
    std::function<void()> learn_limit;        ///< find the frame limit; answered by limit_learned
    /// The stream of an accepted socket (tls_stream.hpp); empty: the plain socket. A stream
    /// that authenticates its peer has every request checked against the peer's identity.
    std::function<std::unique_ptr<byte_stream>(int fd)> make_stream = {};
  };

  /// Serves the listening sockets `tcp_fd` and `local_fd` (-1: none), which stay the caller's.
  link_hub(event_loop& loop, int tcp_fd, int local_fd, int32_t shard_index, link_limits limits,
           hooks h, std::function<void(const std::string&)> log);
  ~link_hub();

  // On the loop's thread:
  void start();
  void on_timer();
  /// The shard's answer to request `id` of `connection` (gone by now, perhaps).
  void answer(uint64_t connection, uint64_t id, const caf::expected<wire_buffer>& reply);
  /// The frame limit found, or nullopt when the shard could not say (not initialised yet).
  void limit_learned(std::optional<std::size_t> limit);

  // From any thread:
  std::size_t refused() const { return refused_.load(); }
  /// Requests refused because the peer's certificate may not make them (link_authorisation.hpp).
  std::size_t unauthorised() const { return unauthorised_.load(); }
  std::size_t connections() const { return open_.load(); }
  std::size_t frame_limit() const { return frame_limit_.load(); }

private:
  struct session;

  void on_listener(int listener, uint32_t events);
  bool shed_one(int listener);
  void pause_accepting();
  void admit(int fd);
  void on_event(uint64_t id, uint32_t events);
  void read_from(session& s);
  bool handle(session& s, const frame_header& h, wire_buffer&& payload);
  bool accept_shm(session& s, const frame_header& h);
  std::string path_of(const session& s) const;
  void send_pending(session& s);
  void update(session& s);
  bool may_read(const session& s) const;
  bool over_totals() const;
  void refuse(session& s, const std::string& why, const caf::error& tell = caf::error{});
  void close(session& s);
  void rearm();

  event_loop& loop_;
  int tcp_fd_;
  int local_fd_;
  int spare_fd_;  // held for the moment the descriptors run out: see shed_one
  int32_t shard_index_;
  link_limits limits_;
  hooks hooks_;
  rate_limited_log log_;
  std::unordered_map<uint64_t, std::unique_ptr<session>> sessions_;
  uint64_t next_id_ = 1;
  std::deque<std::pair<event_loop::clock::time_point, uint64_t>> hello_deadlines_;
  std::optional<event_loop::clock::time_point> accept_retry_;
  event_loop::clock::time_point armed_ = event_loop::clock::time_point::max();
  enum class limit_state { unknown, learning, known } limit_state_ = limit_state::unknown;
  std::vector<uint64_t> parked_;  // sessions whose frame waits for the limit
  std::size_t unsent_total_ = 0;   // reply bytes not yet taken by the clients
  std::size_t pending_total_ = 0;  // requests at the shard or answered and unsent
  std::atomic<std::size_t> refused_{0};
  std::atomic<std::size_t> unauthorised_{0};
  std::atomic<std::size_t> open_{0};
  std::atomic<std::size_t> frame_limit_;
};

} // namespace actorps
