// A push_pull handed to its shard while the data link still reads it (the
// request side pipelined): a shard's data link (link_hub.hpp) asks the shard with a large push
// as soon as its first bytes are in, and goes on reading the rest into the same buffer. The
// shard applies each block once its bytes are in (arrived()), woken by a progress message
// (push_request::more_arrived) after each run of bytes read, so the update of the first
// blocks overlaps the receipt of the last. Only the link writes the buffer, and only past
// arrived(); the shard reads only below it.
//
// Who decides what, once (fate(), one atomic, so neither side can miss the other's move): the
// shard either starts applying the push as it arrives (start_applying) or declines to
// (decline: it answers anything, which the link drops), unless the link found the frame whole
// first (read_whole), in which case the shard takes it as an ordinary push_pull. A push the
// shard declined is asked again by the link once whole, before it reads the connection's next
// frame (requests keep their order). A link that loses the connection, or times the request
// out, before the frame is whole fails the progress: the shard drops what it wrote (its
// parameters unchanged) and goes on.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>

#include <atomic>
#include <cstddef>
#include <memory>

namespace actorps {

class request_progress {
public:
  enum class fate { undecided, applying, declined, whole };

  explicit request_progress(std::size_t total) : total_(total) {}

  std::size_t total() const { return total_; }
  /// Bytes of the payload in the buffer, from its start (acquire: they are readable).
  std::size_t arrived() const { return arrived_.load(std::memory_order_acquire); }
  /// The rest will never come: the connection broke or the request timed out.
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  fate decided() const { return fate_.load(std::memory_order_acquire); }

  // The shard's side; each false when the link found the frame whole first.
  bool start_applying() { return settle(fate::applying) == fate::undecided; }
  bool decline() { return settle(fate::declined) == fate::undecided; }

  // The link's side:
  void advance(std::size_t arrived) { arrived_.store(arrived, std::memory_order_release); }
  void fail() { failed_.store(true, std::memory_order_release); }
  /// The frame is whole: what the shard decided before, or undecided (it will take it whole).
  fate read_whole() {
    advance(total_);
    return settle(fate::whole);
  }

private:
  /// Moves from undecided to `to`; returns the fate found (undecided: moved).
  fate settle(fate to) {
    auto found = fate::undecided;
    fate_.compare_exchange_strong(found, to, std::memory_order_acq_rel);
    return found;
  }

  const std::size_t total_;
  std::atomic<std::size_t> arrived_{0};
  std::atomic<bool> failed_{false};
  std::atomic<fate> fate_{fate::undecided};
};

using request_progress_ptr = std::shared_ptr<request_progress>;

} // namespace actorps

// Local only: a shard's data link and its shard share a process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorps::request_progress_ptr)
