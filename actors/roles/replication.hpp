// Hot standbys (--replicas 1): how a shard and its standby stay identical.
//
// What travels. Each push the primary accepts travels to its standby whole (the gradient, as
// the worker sent it), and so does every change of the clock table (leave, rejoin, admit). The
// standby runs them through the same code as the primary, in the same order, so its values,
// optimizer state, sparse rows and sync round are the primary's bit for bit — no float is ever
// recomputed differently. OSDI'14 aggregates a clock's updates before replicating them; that
// saves bytes when several workers push to a shard per clock, but a delta cannot be checked
// again by the standby, and sync mode's mean is applied once per clock anyway. The cost is one
// copy of each push per shard (scripts/bench/replicas.sh measures it).
//
// Acknowledged means replicated. The primary applies an operation only once its standby has
// acknowledged it (a request; the primary never blocks), in the order it sent them: a
// replication_queue keeps the operations waiting for their turn. The reply to a push is made
// then, through a response promise, by the same rule as without a standby — so no worker ever
// sees a value its standby does not hold, and the order of replies and the consistency rules
// (sync, ssp, async) are unchanged. Pulls and snapshots read the applied state at once.
//
// A new standby. The chief spawns it and tells the primary (backup); once the operations in
// flight have been applied, the primary sends it a replica_image (messages.hpp: the state as a
// ShardCheckpoint, the clock table, and in sync mode the pushes of the clock being accumulated,
// which the standby replays) and forwards every later operation behind it. Training goes on
// meanwhile. A standby that is lost is dropped at its first failed acknowledgement: the
// operations waiting are applied unprotected and the chief builds another.
//
// A window of messages. The primary sends at most replication_window::limit operations that its
// standby has not answered yet; the next wait, in order, until one is answered. Across
// processes the standby's task dials the primary's, so the primary writes to it on a connection
// its published port accepted, and the port guard (caf_port_limits.hpp) cuts a peer with more
// than max_unsent_messages (16) queued: a standby behind by one push per worker (18 workers,
// or 9 with two shards' standbys in one task) would be cut off and its shards left unprotected.
// The window keeps a connection's share of each shard far under the bound.
//
// Fail-over. When the primary is lost, the chief promotes the standby (promote) and tells every
// worker to send its request in flight, and every later one, to it (reroute). A push the
// standby had already applied comes again; the promoted shard answers it without applying it
// (deduplicated by worker, incarnation and clock: its clock table says that worker finished
// that clock). In one process nothing forwarded can be lost: the primary's messages are in the
// standby's mailbox before the chief learns of the loss. With both copies lost the run falls
// back to the checkpoint rollback.
//
// Where the standby lives: in `simulate`, a second shard actor in the same process. In a
// deployment (one process per task) the standby of ps:i runs in task ps:(i+1) mod P (P >= 2, no
// extra process), spawned there by its ps task when the chief asks (standby); it takes
// replication only from the task its primary runs in and the chief (authorisation.hpp). Its
// primary monitors it: a request to another process is not answered when that process dies, so
// the down message completes what waits (applied unprotected), as a failed request does here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>

namespace actorps {

/// The primary's operations in the order they were accepted, each applied when it and every
/// one before it are done (acknowledged by the standby, or needing no acknowledgement).
class replication_queue {
public:
  /// Runs `apply` now when nothing waits, else after everything waiting.
  void run_or_queue(std::function<void()> apply);
  /// Queues `apply` until complete(returned ticket).
  uint64_t expect(std::function<void()> apply);
  /// The standby answered the operation `ticket` (or is lost): it, and every one after it
  /// already done, is applied.
  void complete(uint64_t ticket);
  /// The standby is gone (its process lost): nothing more will be acknowledged; everything
  /// waiting is applied now, in order, unprotected — up to a hold, which only its complete()
  /// ends.
  void complete_all();
  /// Holds everything queued after it until complete(returned ticket), whatever the standby
  /// does: an operation of the shard's own in progress (a push applied as it arrives,
  /// request_progress.hpp), which nothing may overtake.
  uint64_t hold();
  /// Whether no operation waits.
  bool idle() const { return waiting_.empty(); }
  std::size_t waiting() const { return waiting_.size(); }

private:
  struct entry {
    uint64_t ticket;
    bool done;
    std::function<void()> apply;
    bool held = false;  // a hold: complete_all leaves it
  };
  void drain();

  std::deque<entry> waiting_;
  uint64_t next_ = 0;
  bool draining_ = false;
};

/// The primary's messages to one standby that are unanswered, at most `limit`; the others wait
/// their turn in order. One window per standby: a new standby gets a new one, so the answers
/// a lost standby never gives hold nothing up.
class replication_window {
public:
  /// At most 4 per shard: a ps task whose standbys of several shards are in one other task
  /// (after fail-overs) stays far under the port guard's 16 messages queued per connection.
  static constexpr std::size_t limit = 4;

  /// Runs `send` now when fewer than `limit` are unanswered, else after those before it.
  void send(std::function<void()> send);
  /// One message sent was answered (or failed): the next waiting is sent.
  void answered();
  std::size_t in_flight() const { return in_flight_; }
  std::size_t held() const { return held_.size(); }

private:
  void pump();

  std::deque<std::function<void()>> held_;
  std::size_t in_flight_ = 0;
  bool pumping_ = false;
};

} // namespace actorps
