// The bounds of one CAF port published with publish_guarded (caf_port_limits.hpp): counts its
// open connections, arms each one's handshake deadline, keeps the total of unsent reply bytes,
// and reports (rate-limited, with the peer's address) each connection it refuses or closes.
//
// Threads: everything but the timer runs in CAF's network thread (the multiplexer), where the
// BASP broker and its connections live; a deadline's expiry is dispatched into it.
#pragma once

#include "actors/guard/caf_port_limits.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/io/network/default_multiplexer.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace actorps {

/// A connection the guard may close before its time.
class closable_connection {
public:
  virtual ~closable_connection() = default;
  /// Closes the connection at once, unsent bytes dropped; the BASP broker learns it as a
  /// connection the peer closed.
  virtual void close_now(const std::string& why) = 0;
};

/// What the guard counted since the port was published.
struct caf_port_counts {
  uint64_t refused_over_limit = 0;  // accepted with max_connections already open, all through
  uint64_t evicted = 0;             // handshake pending, closed to make room for a newer one
  uint64_t refused_no_fd = 0;       // shed because the process had no descriptor left
  uint64_t closed_by_deadline = 0;  // handshake not through in time
  uint64_t closed_unread = 0;       // replies left unread
};

class caf_port_guard : public std::enable_shared_from_this<caf_port_guard> {
public:
  using report_fn = std::function<void(const std::string& peer, const std::string& why)>;

  /// A guard for a port of `sys`, reporting through `report` (already rate-limited).
  static std::shared_ptr<caf_port_guard> make(caf::actor_system& sys,
                                              caf::io::network::default_multiplexer& mx,
                                              const caf_port_limits& limits, report_fn report);
  ~caf_port_guard();

  const caf_port_limits& limits() const { return limits_; }

  /// Accepts one connection from `listener` into `result` (invalid when there was none), as
  /// CAF's TCP policy does, except that a process out of descriptors does not spin on the
  /// listener: a spare descriptor is given up to accept the peer and close it at once
  /// (counted, reported), so accepting goes on as soon as descriptors are free again.
  bool accept(caf::io::network::native_socket& result, caf::io::network::native_socket listener);

  /// Takes a freshly accepted connection from `peer` ("ip:port"): true if it may open (it
  /// counts as open until closed() is called), false if the port is full of connections whose
  /// handshake is through (counted and reported; close it). Else room is made first: the
  /// oldest pending connection of its address, when that address has its most pending, or of
  /// the address with the most pending, when the port is full, is closed.
  bool admit(const std::string& peer);
  /// A connection admitted is gone (its socket closed).
  void closed();

  /// Arms the handshake deadline of `conn` from `peer` ("ip:port"); returns its key for
  /// through() and forget().
  uint64_t watch(closable_connection* conn, const std::string& peer);
  /// The connection's handshake is through: its deadline is off.
  void through(uint64_t key);
  /// The connection is about to be destroyed.
  void forget(uint64_t key);

  /// `bytes` more (or, negative, fewer) unsent bytes on the port's connections; returns the
  /// new total.
  std::size_t add_unsent(std::ptrdiff_t bytes);

  /// Counts a connection closed because it left its replies unread.
  void count_unread();
  /// Reports (rate-limited) a connection refused or closed for `why`.
  void report(const std::string& peer, const std::string& why) const;

  caf_port_counts counts() const;

private:
  caf_port_guard(caf::io::network::default_multiplexer& mx, const caf_port_limits& limits,
                 report_fn report);
  /// In the network thread: closes the connection under `key` if its handshake is not through.
  void expire(uint64_t key);
  /// Under the mutex: takes the pending connection of `address` to close to make room (its
  /// oldest), or of the address with the most pending when `address` is empty; null if none.
  closable_connection* take_victim(const std::string& address);
  void drop_pending(std::map<uint64_t, closable_connection*>::iterator it);

  caf::io::network::default_multiplexer& mx_;
  caf_port_limits limits_;
  report_fn report_;
  caf::actor timer_;  // turns each deadline into a call of expire() in the network thread
  int spare_fd_;      // given up when the process runs out of descriptors

  mutable std::mutex mutex_;
  std::map<uint64_t, closable_connection*> pending_;  // handshake not through yet
  std::map<uint64_t, std::string> address_of_;         // their addresses
  std::map<std::string, std::set<uint64_t>> pending_by_address_;
  std::set<uint64_t> closing_;  // closed to make room, not destroyed yet (still counted open)
  uint64_t next_key_ = 1;
  std::size_t open_ = 0;
  std::atomic<std::size_t> unsent_{0};
  caf_port_counts counts_;
};

} // namespace actorps
