// What keeps a float buffer alive and unchanged while messages built on it by reference live
// (queued on a data link, in a mailbox, kept by a shard): each such message holds the buffer's
// lease. The owner writes into the buffer only when no message holds its lease; otherwise the
// lease takes the buffer (freed with the last of those messages, or given back to the owner's
// buffer_pool) and the owner writes into another one. Used by the shard's replies
// (shard_pulls.cpp, dense_update.cpp) and the worker's pushes (worker.cpp).
// The buffers come from link_memory.hpp's arena, which a shared-memory link sends by reference.
#pragma once

#include "actors/protocol/link_memory.hpp"

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace actorps {

/// Buffers handed over to messages, given back once the last of them lets go, for the owner's
/// next buffer of the same size. Why: a shard whose replies are still held when it applies the
/// next update (an evaluator keeping a snapshot by reference while it evaluates, several
/// push_pulls in flight), or a worker whose last push a sync shard keeps, would otherwise
/// allocate a fresh buffer per update or step, which the allocator zeroes and the kernel faults
/// in page by page: a pass over the payload or more before it is written. The cost: up to `keep` buffers of that size stay allocated
/// while unused (in a link memory arena, freed ones stay resident anyway). Thread-safe: a
/// buffer comes back on whichever thread drops the last message holding it.
class buffer_pool {
public:
  /// Keeps at most `keep` buffers; more are freed.
  explicit buffer_pool(std::size_t keep = 2) : keep_(keep) {}

  /// Keeps `buffer` for a later take (or frees it, when `keep` are kept already).
  void give(float_buffer&& buffer);
  /// A buffer of `n` floats: one given back (its values whatever they were), else a new one of
  /// zeros. Kept buffers of another size (the shard was set up again) are freed.
  float_buffer take(std::size_t n);
  /// Buffers kept now.
  std::size_t kept() const;

private:
  const std::size_t keep_;
  mutable std::mutex mutex_;
  std::vector<float_buffer> kept_;
};

struct buffer_lease {
  buffer_lease() = default;
  /// A lease whose orphaned buffer goes back to `pool` when the last message lets go.
  explicit buffer_lease(std::shared_ptr<buffer_pool> pool) : pool(std::move(pool)) {}
  buffer_lease(const buffer_lease&) = delete;
  buffer_lease& operator=(const buffer_lease&) = delete;
  ~buffer_lease() {
    if (pool && !orphaned.empty()) pool->give(std::move(orphaned));
  }

  float_buffer orphaned;
  std::shared_ptr<buffer_pool> pool;  // may be null: the buffer is then freed
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
