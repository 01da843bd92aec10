// A co-located peer's arena (link_memory.hpp), read-only, mapped a window at a time where the
// pieces of its messages lie (shm_region.hpp's records of pieces).
//
// Why windows and not the whole file: an arena is 16 GiB of virtual size, and a shard has one
// per worker it serves by shared memory; mapping each whole made a ps hold 81 GiB of address
// space with four workers, so any `ulimit -v` below that broke it. A window is 64 MiB of the
// file, aligned (or as large as the piece it holds), and stays mapped while this object lives:
// a message read in place keeps pointers into it. The address space held follows what the
// peer's messages name, which its own arena's use bounds.
#pragma once

#include <caf/expected.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace actorps {

/// Largest peer arena a shard maps (virtual: only what the peer writes is memory).
inline constexpr std::size_t max_peer_arena_bytes = std::size_t(1) << 40;
/// The granule of the windows mapped.
inline constexpr std::size_t peer_arena_window_bytes = std::size_t(64) << 20;

class peer_arena {
public:
  /// Takes a duplicate of `fd` (a sealed memfd of at most max_peer_arena_bytes, checked); the
  /// caller's descriptor stays its own. Maps nothing yet.
  static caf::expected<std::shared_ptr<peer_arena>> open(int fd);
  ~peer_arena();
  peer_arena(const peer_arena&) = delete;
  peer_arena& operator=(const peer_arena&) = delete;

  /// The arena's size: every offset a piece may name lies below it.
  std::size_t size() const { return size_; }

  /// Where [offset, offset + bytes) of the arena is mapped here, mapping a window when none
  /// holds it; null when the range lies outside the arena or mmap fails. Thread-safe.
  const uint8_t* at(uint64_t offset, uint64_t bytes);

  /// Bytes of address space its windows hold.
  std::size_t mapped_bytes() const;

private:
  peer_arena(int fd, std::size_t size) : fd_(fd), size_(size) {}

  int fd_;
  std::size_t size_;
  mutable std::mutex mutex_;
  using window = std::pair<const uint8_t*, std::size_t>;  // where, bytes
  std::map<uint64_t, window> windows_;  // by the file offset they start at
  std::vector<window> retired_;         // replaced by a larger one starting there; still mapped
  std::size_t mapped_ = 0;
};

} // namespace actorps
