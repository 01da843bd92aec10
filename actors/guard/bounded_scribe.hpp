// A connection of a guarded CAF port (Base: CAF's scribe_impl over TCP, or tls_scribe) held to
// the port's bounds (caf_port_guard.hpp): closed when its handshake is not through in time,
// and when its peer leaves its replies unread.
//
// Closing: the socket is shut down (with SO_LINGER 0, so that its unsent bytes are dropped
// instead of lingering in the kernel), and CAF's stream then reads the end of the connection
// and tells the BASP broker as it does for a peer that left: the broker's state for the
// connection goes the normal way. Never closed from inside the broker's own call (a flush):
// the shutdown only makes the next event of the network loop a failure.
#pragma once

#include "actors/guard/caf_port_guard.hpp"

#include <caf/io/network/native_socket.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sys/socket.h>

namespace actorps {

template <class Base>
class bounded_scribe : public Base, public closable_connection {
public:
  /// `closed_by_guard` is set once the guard closed the connection (so that the failure the
  /// close causes is not reported a second time as the peer's).
  template <class... Args>
  bounded_scribe(std::shared_ptr<caf_port_guard> guard, std::string peer,
                 std::shared_ptr<bool> closed_by_guard, Args&&... base_args)
    : Base(std::forward<Args>(base_args)...), guard_(std::move(guard)), peer_(std::move(peer)),
      closed_by_guard_(std::move(closed_by_guard)) {
    Base::ack_writes(true);  // data_transferred tells when a write in flight is done
    key_ = guard_->watch(this, peer_);
  }

  ~bounded_scribe() override {
    guard_->add_unsent(-static_cast<std::ptrdiff_t>(unsent_));
    guard_->forget(key_);
    guard_->closed();
  }

  void close_now(const std::string& why) override {
    if (closing_) return;
    closing_ = true;
    if (closed_by_guard_) *closed_by_guard_ = true;
    auto fd = static_cast<caf::io::network::native_socket>(this->hdl().id());
    linger abort{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    ::shutdown(fd, SHUT_RDWR);
    guard_->report(peer_, why);
  }

  // The BASP broker writes each message into wr_buf() and flushes it.
  void flush() override {
    auto& queued = this->wr_buf();  // the bytes behind the write in flight
    if (!closing_) {
      if (queued.size() > queued_seen_) {
        auto grown = queued.size() - queued_seen_;
        unsent_ += grown;
        total_ = guard_->add_unsent(static_cast<std::ptrdiff_t>(grown));
        ++messages_queued_;
      }
      auto& limits = guard_->limits();
      if (messages_queued_ > limits.max_unsent_messages
          || (total_ > limits.max_unsent_total && messages_queued_ >= 2)) {
        guard_->count_unread();
        close_now("it does not read its replies: closed (" + std::to_string(messages_queued_)
                  + " messages queued behind the one it is being sent, "
                  + std::to_string(unsent_ >> 10) + " KiB unsent)");
      }
    }
    if (closing_) {  // nothing more goes out: drop what the broker writes
      drop(queued.size());
      std::vector<char>{}.swap(queued);
      queued_seen_ = 0;
      return;
    }
    Base::flush();
    queued_seen_ = queued.size();
    if (queued_seen_ == 0) messages_queued_ = 0;  // the stream took the queue at once
  }

  void ack_writes(bool enable) override {
    broker_wants_acks_ = enable;
    Base::ack_writes(true);
  }

  void data_transferred(caf::execution_unit* ctx, size_t written, size_t remaining) override {
    // `remaining` counts all unsent bytes: the rest of the write in flight, then the queue.
    total_ = guard_->add_unsent(static_cast<std::ptrdiff_t>(remaining)
                                - static_cast<std::ptrdiff_t>(unsent_));
    unsent_ = remaining;
    // A write in flight that is done gives way to the queue (the stream swaps the buffers).
    auto queued = this->wr_buf().size();
    if (remaining > queued) {
      queued_seen_ = queued;
    } else {
      queued_seen_ = 0;
      messages_queued_ = 0;
    }
    if (broker_wants_acks_) Base::data_transferred(ctx, written, remaining);
  }

protected:
  /// The TLS and BASP handshake is through: the deadline is off.
  void handshake_through() { guard_->through(key_); }

private:
  void drop(std::size_t bytes) {
    bytes = std::min(bytes, unsent_);
    unsent_ -= bytes;
    total_ = guard_->add_unsent(-static_cast<std::ptrdiff_t>(bytes));
  }

  std::shared_ptr<caf_port_guard> guard_;
  std::string peer_;
  std::shared_ptr<bool> closed_by_guard_;
  uint64_t key_ = 0;
  bool closing_ = false;
  bool broker_wants_acks_ = false;
  std::size_t unsent_ = 0;            // bytes given to the stream and not sent yet
  std::size_t queued_seen_ = 0;       // size of wr_buf() when last looked at
  std::size_t messages_queued_ = 0;   // messages flushed behind the write in flight
  std::size_t total_ = 0;             // the port's unsent bytes when last looked at
};

} // namespace actorps
