// Shared memory between a worker (or the evaluator) and a shard in two processes on one host:
// the payloads of a data link's frames travel through two memfd regions, and the link's local
// socket carries only the 40-byte headers (the payload's offset in `a`, its length in `size`)
// and, by blocking on it, the wake-ups. No kernel copy of the payload.
//
// Layout: one ring per direction (requests: worker → shard; replies: shard → worker), each a
// memfd region its writer allocates records in:
//
//   region: | record | record | ... free ... | record | ...     (records wrap to offset 0)
//   record: | 64-byte record header: released flag (u32) | payload, rounded up to 64 bytes |
//
// Why a ring of variable records rather than fixed slots: payload sizes differ (a push, a
// keyed pull, a snapshot, a reply of one shard's parameters) and the model's size is unknown
// when the link opens; a ring takes any size up to its own and, with one request in flight,
// reuses its first pages every time (warm pages: no page faults after the first round trip).
// The writer keeps the list of its records in its own memory (never reads lengths back from
// the region, which the peer can write) and reclaims them in order once the reader has set a
// record's released flag; a record the reader still holds keeps the ones after it. A frame
// whose payload does not fit in what is free goes inline on the socket as before, so a reader
// that keeps its buffers long (or never releases them) slows its link but never blocks it.
//
// The reader wraps a record in a wire_buffer without copying: the buffer keeps the mapping
// alive and sets the released flag when its last holder drops it. Offsets and lengths from the
// peer are outside input: checked against the region before anything is read (shm_inbox).
// A peer can still write a record while it is read (same host, same user: it can only spoil
// its own values; Cap'n Proto bounds-checks every pointer on each access, so memory stays safe).
//
// Copies of ours (counted in copied_payload_bytes): the writer copies a message's bytes into
// its record once (a wire_buffer's pieces, gathered); the reader uses the record in place (the
// shard applies a push from it) or copies it out once (a worker's reply into its parameters).
//
// Sizes are sealed (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL): neither side can shrink a
// region under the other's mapping (which would turn its reads into SIGBUS). The descriptors
// are closed as soon as both sides have mapped the regions; a mapping ends with its last user.
#pragma once

#include "actors/protocol/wire.hpp"

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

namespace actorps {

/// Bytes of each ring of a shared-memory link (pages are taken only where records are written).
inline constexpr std::size_t shm_ring_bytes = std::size_t(64) << 20;
/// A record's header and the alignment of every record.
inline constexpr std::size_t shm_record_align = 64;

/// One mapped region, unmapped when the last holder lets go.
class shm_mapping {
public:
  /// Maps `fd` (a sealed memfd of `bytes`, checked); the descriptor stays the caller's.
  static caf::expected<std::shared_ptr<shm_mapping>> map(int fd, std::size_t bytes);
  ~shm_mapping();
  shm_mapping(const shm_mapping&) = delete;
  shm_mapping& operator=(const shm_mapping&) = delete;

  uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }

private:
  shm_mapping(uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  uint8_t* data_;
  std::size_t size_;
};

/// A fresh sealed memfd of `bytes` ("actorps-link" in /proc/PID/fd), close-on-exec; -1 with
/// `why` set on failure.
int create_shm_region(std::size_t bytes, std::string& why);

/// The writer's side of one ring. Used by one thread at a time.
class shm_ring {
public:
  explicit shm_ring(std::shared_ptr<shm_mapping> region) : region_(std::move(region)) {}

  /// Copies `payload`'s bytes into a fresh record (counted) and returns the payload's offset in
  /// the region; -1 when the ring has no room for it (send it inline then).
  int64_t place(const wire_buffer& payload);

  std::size_t records_in_use() const { return records_.size(); }

private:
  struct record {
    std::size_t start;
    std::size_t end;
  };
  void reclaim();

  std::shared_ptr<shm_mapping> region_;
  std::deque<record> records_;
  std::size_t head_ = 0;
};

/// The reader's side of one ring.
class shm_inbox {
public:
  explicit shm_inbox(std::shared_ptr<shm_mapping> region) : region_(std::move(region)) {}

  /// The payload of `size` bytes at `offset` (a frame's a and size) as a wire_buffer over the
  /// region, released to the writer when its last holder drops it; malformed_message when the
  /// peer's numbers do not describe a record inside the region.
  caf::expected<wire_buffer> take(int64_t offset, uint64_t size) const;

private:
  std::shared_ptr<shm_mapping> region_;
};

/// Both rings of one link end: what this side writes and what it reads.
struct shm_link {
  shm_ring out;
  shm_inbox in;
};

} // namespace actorps
