// What one published CAF port (BASP, publish_guarded) lets its peers hold: connections, time to
// finish the TLS and BASP handshake, and replies the peer leaves unread. The data link's figures
// are beside it (link_limits.hpp).
//
// Replies left unread: the BASP broker serialises every message for a peer into that
// connection's write buffer at once, whether or not the peer reads, so a client that sends
// requests and never reads (8 000 snapshot requests grew a ps to 2.7 GB) is the one to cut off.
// A peer is judged by the messages queued for it behind the one it is being sent (the write in
// flight), which a peer that reads takes as a whole at its next turn:
//   - a legitimate peer has at most a few requests outstanding on one connection (a worker its
//     pull and its push per shard, the evaluator one snapshot, the chief one checkpoint per
//     shard), and its network thread always reads, so it never has 16 messages queued while
//     one is in flight; a client that never reads, or reads a trickle, soon has;
//   - each queued message is at most the largest reply, a full snapshot of the shard (S bytes:
//     the default MLP's 235 k parameters over 2 shards make S ≈ 0.47 MB).
// So a connection holds at most max_unsent_messages × S queued plus the write in flight (at most
// as many messages again: the queue it took over), and past max_unsent_total for the whole port
// every connection with two messages queued is cut off too.
#pragma once

#include <chrono>
#include <cstddef>

namespace actorps {

struct caf_port_limits {
  /// Open connections on the port (the same figure as the data link's). A connection accepted
  /// when it is full takes the place of one whose handshake is not through (the oldest of the
  /// address holding the most such), so that silent connections cannot keep a peer out; only
  /// when every one is through is it closed at once.
  std::size_t max_connections = 512;
  /// Connections of one address (IP) whose handshake is not through; a new one takes the place
  /// of its oldest.
  std::size_t max_pending_per_address = 32;
  /// A connection whose TLS and BASP handshake is not through by then is closed (the data
  /// link's hello has the same).
  std::chrono::milliseconds handshake_timeout{10000};
  /// Messages queued for a peer behind the one being sent; one more and it is disconnected.
  std::size_t max_unsent_messages = 16;
  /// Unsent bytes of all the port's connections together; past it a connection with two
  /// messages queued behind the one being sent is disconnected.
  std::size_t max_unsent_total = std::size_t(256) << 20;
};

} // namespace actorps
