// What keeps a float buffer alive and unchanged while messages built on it by reference live
// (queued on a data link, in a mailbox, kept by a shard): each such message holds the buffer's
// lease. The owner writes into the buffer only when no message holds its lease; otherwise the
// lease takes the buffer (freed with the last of those messages) and the owner writes into a
// fresh one. Used by the shard's replies (shard_pulls.cpp, dense_update.cpp) and the worker's
// pushes (worker.cpp).
// The buffers come from link_memory.hpp's arena, which a shared-memory link sends by reference.
#pragma once

#include "actors/protocol/link_memory.hpp"

#include <atomic>
#include <memory>

namespace actorps {

struct buffer_lease {
  float_buffer orphaned;
};

/// Makes `buffer` safe to write: if messages still hold `lease`, the buffer goes to them (moving
/// a vector keeps its data where the messages point) and `buffer` is left empty. The lease is
/// dropped either way: the next message on this buffer takes a new one. Returns whether the
/// buffer was handed over (the caller needs a fresh one).
inline bool release_for_writing(float_buffer& buffer, std::shared_ptr<buffer_lease>& lease) {
  if (!lease) return false;
  bool handed_over = lease.use_count() > 1;  // 1: only the owner holds it; nobody can copy it
  if (handed_over) {
    lease->orphaned = std::move(buffer);
    buffer.clear();
  } else {
    // The last message let go with a release decrement; this pairs with it, so that its reads
    // of the buffer (a send) happen before the writes that follow.
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  lease.reset();
  return handed_over;
}

} // namespace actorps
