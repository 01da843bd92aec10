// What one ps process's data link server lets its clients hold: connections, requests and reply
// bytes per connection and in all, the size of a request frame. With these, memory the server
// holds for its clients is bounded (R: the shard's largest reply, Q: its request frame limit):
//   replies (at the shard or unsent) ≤ (max_requests_total + max_connections) × R
//   request payloads being read      ≤ max_connections × Q (pages only as the bytes arrive)
// The max_connections × R term is the one request every connection may always have, so that
// held pulls never wait for pushes the server does not read.
//
// Strangers (connections whose TLS handshake or hello is not through) have a pool of their own,
// beside the max_connections of clients served: they read no request, so they hold no more than
// a socket and a TLS session each. When the pool, or the share of one address, is full, a new
// connection takes the place of a stranger (one that has sent nothing first, then the oldest,
// of the address holding the most) instead of being refused: connections that never speak,
// reopened as fast as they are closed, cannot keep a worker out (600 had locked every new
// client out of the 512 connections for as long as they lasted).
#pragma once

#include <chrono>
#include <cstddef>

namespace actorps {

struct link_limits {
  /// Connections served (their hello answered); the hello over it gets a failure frame (a plain
  /// connection accepted while they are all taken, at once: it could never be served).
  std::size_t max_connections = 512;
  /// Strangers held at once, in all and from one address (IP, or the local socket), at least 1.
  std::size_t max_strangers = 256;
  std::size_t max_strangers_per_address = 32;
  /// Requests of one connection at the shard or answered but unsent; the server stops reading a
  /// connection at this many (a worker has one or two, the evaluator one).
  std::size_t max_requests_per_connection = 16;
  /// Reply bytes one connection has not taken yet; past it the server stops reading from it.
  std::size_t max_unsent_bytes = std::size_t(64) << 20;
  /// Reply bytes all connections together have not taken, and requests of all connections at
  /// the shard or unsent; past either, only connections with nothing pending are read (one
  /// request each), so clients that do not read their replies slow nobody down for good.
  std::size_t total_unsent_bytes = std::size_t(256) << 20;
  std::size_t max_requests_total = 128;
  /// The largest request accepted until the shard's spec is known (before its init): a hello,
  /// a pull, a small keyed request.
  std::size_t frame_limit_before_init = std::size_t(64) << 10;
  /// Added to the dense push size for a model with sparse tables: the spec bounds no key count,
  /// so this documented figure does (a push of 64 MiB of keys and rows; Criteo-like batches
  /// push a few MiB).
  std::size_t sparse_request_allowance = std::size_t(64) << 20;
  /// A stranger that has not said its hello within this (its TLS handshake included) is closed.
  std::chrono::milliseconds hello_timeout{5000};
  /// A push_pull's reply of at least two of these goes ahead in parts of about this many bytes
  /// (at block boundaries) while the shard still applies the push (reply_stream.hpp), so the
  /// worker copies the first blocks in as the shard writes the next; 0: replies go whole.
  /// 4 MiB: a 16 MiB reply in 4 parts; a 4 MiB one whole (in parts of 1 MiB it was no faster
  /// on 2 cores).
  std::size_t reply_part_bytes = std::size_t(4) << 20;
  /// A push_pull of at least two of these, read off a plain socket, is handed to the shard as
  /// soon as this many of its bytes are in, and the shard is told after each further run of
  /// this many, so that it applies the first blocks while the last arrive
  /// (request_progress.hpp); 0: every request is read whole first.
  std::size_t request_part_bytes = std::size_t(1) << 20;
};

/// The largest legitimate request to a shard whose dense snapshot (ShardParameters of all its
/// blocks) is `dense_snapshot_bytes`: a push of every block of the shard is the same list of
/// blocks plus a few header words, and a model with sparse tables adds the allowance.
inline std::size_t request_frame_limit(std::size_t dense_snapshot_bytes, bool sparse_tables,
                                       const link_limits& limits) {
  constexpr std::size_t slack = 64 << 10;  // a push's own fields, a keyed pull of a dense model
  return dense_snapshot_bytes + slack + (sparse_tables ? limits.sparse_request_allowance : 0);
}

} // namespace actorps
