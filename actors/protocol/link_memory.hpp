// Memory that a shared-memory data link can send by reference: one arena per process, a sealed
// memfd mapped here, which a co-located peer maps read-only when the link opens (shm_region.hpp).
// A message whose float blocks lie in the arena (a worker's gradient, built into a push by
// reference) then travels as the blocks' offsets, not as a copy of them in the link's ring.
//
// Why an arena and not the ring: the ring is one link's, and a buffer is sent to several (a
// worker's gradient to every shard, a shard's parameters to every worker); the arena is the
// process's, so any of its links can name any of its buffers.
//
// The arena is virtual until written: ftruncate reserves no memory, a page is taken where a
// buffer is first written. Nor does it hold address space it does not use: its file is mapped
// here a stretch at a time as buffers need it (64 MiB, then as much again as is mapped), and a
// peer maps only the stretches its messages name (peer_arena.hpp), so `ulimit -v` need not
// cover the arena's full size. A freed block goes back to a first-fit free list (not to the
// kernel: the same few buffer sizes are freed and taken again every step, on warm pages). Before
// enable_link_memory, beyond the arena's size, and for small buffers, memory comes from the heap
// and a link copies it as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// Virtual size of a process's arena (its pages are taken only where buffers are written, its
/// address space only where buffers lie).
inline constexpr std::size_t default_link_memory_bytes = std::size_t(16) << 30;
/// Buffers smaller than this come from the heap (a link copies them: cheaper than a page each).
inline constexpr std::size_t link_memory_min_bytes = 64 * 1024;

/// Creates this process's arena (idempotent: a second call keeps the first arena). Returns ""
/// or why not, in which case buffers keep coming from the heap.
std::string enable_link_memory(std::size_t bytes = default_link_memory_bytes);

/// The arena's descriptor (-1 before enable_link_memory) and size, to hand to a peer.
int link_memory_fd();
std::size_t link_memory_bytes();

/// Offset of [p, p + n) in this process's arena; -1 when it does not lie wholly inside.
int64_t link_memory_offset(const void* p, std::size_t n);

/// Bytes of the arena in use by live buffers (for tests and the benchmark).
std::size_t link_memory_in_use();
/// Bytes of the arena mapped in this process: the address space it holds (at most twice the
/// most it had in use, or 64 MiB).
std::size_t link_memory_mapped();

void* link_memory_allocate(std::size_t bytes);
void link_memory_free(void* p, std::size_t bytes);

/// A stateless allocator over the arena: every instance is equal, so buffers built with it move
/// and swap like plain vectors.
template <class T>
struct link_allocator {
  using value_type = T;
  link_allocator() = default;
  template <class U>
  link_allocator(const link_allocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(link_memory_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { link_memory_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const link_allocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const link_allocator<U>&) const { return false; }
};

/// A float buffer that messages may be built on by reference (buffer_lease.hpp).
using float_buffer = std::vector<float, link_allocator<float>>;

} // namespace actorps
