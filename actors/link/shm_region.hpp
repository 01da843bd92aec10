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
// By reference (no copy on send): when the writer's process arena (link_memory.hpp) is mapped
// by the reader too (read-only, offered with the rings), a message built by reference whose
// float blocks lie in the arena goes as a record of pieces instead:
//
//   record: | header | piece table: one shm_piece per segment | the pieces kept inline |
//
// Piece 0 is inline: the segment table and the structure (a few hundred bytes, copied); each
// block in the arena is named by its offset there and not copied; a block elsewhere (the heap)
// is copied inline. The frame says how many pieces (its b). The writer's record keeps the
// message (and so the lease of the buffer its blocks lie in: buffer_lease.hpp) until the reader
// releases the record, so the blocks cannot change while the reader reads them; the reader
// builds a message of segments over the record and the arena, used where it lies. The blocks
// that a ring's unreleased records name are bounded by the ring's own size: a reader that holds
// its records (a stalled worker, a long evaluation) would otherwise keep a buffer alive per
// record, and the writer would allocate a fresh one for every update; past the bound a message
// is copied into the ring as before, and a full ring sends inline, as before.
//
// Sizes are sealed (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL): neither side can shrink a
// region under the other's mapping (which would turn its reads into SIGBUS). The descriptors
// are closed as soon as both sides have mapped the regions; a mapping ends with its last user.
#pragma once

#include "actors/link/peer_arena.hpp"
#include "actors/protocol/wire.hpp"

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

namespace actorps {

/// Bytes of each ring of a shared-memory link (pages are taken only where records are written).
inline constexpr std::size_t shm_ring_bytes = std::size_t(64) << 20;
/// A record's header and the alignment of every record.
inline constexpr std::size_t shm_record_align = 64;

/// Most pieces one record may name (a push or reply has a segment per block, and models have
/// tens of blocks).
inline constexpr int64_t max_shm_pieces = 4096;

/// One piece of a record of pieces: inline (offset from the record's payload) or in the
/// writer's arena (offset there).
struct shm_piece {
  uint64_t in_arena;
  uint64_t offset;
  uint64_t bytes;
};
static_assert(sizeof(shm_piece) == 24, "a piece's descriptor is 24 bytes in the record");

/// One mapped region, unmapped when the last holder lets go.
class shm_mapping {
public:
  /// Maps `fd` (a sealed memfd of `bytes`, checked), read-write or only for reading; the
  /// descriptor stays the caller's.
  static caf::expected<std::shared_ptr<shm_mapping>> map(int fd, std::size_t bytes,
                                                         bool writable = true);
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

/// Where place() put a payload: the record's payload offset in the region (-1: no room, send it
/// inline then), its bytes there, and its pieces (0: the payload itself, copied).
struct shm_placed {
  int64_t offset = -1;
  uint64_t size = 0;
  int64_t pieces = 0;
};

/// The writer's side of one ring. Thread-safe (the worker's requests are placed by the worker,
/// and released records reclaimed by its reader thread as replies come).
class shm_ring {
public:
  /// `by_reference`: the reader maps this process's arena, so blocks there go as pieces.
  explicit shm_ring(std::shared_ptr<shm_mapping> region, bool by_reference = false)
    : region_(std::move(region)), by_reference_(by_reference) {}
  shm_ring(shm_ring&& other) noexcept
    : region_(std::move(other.region_)), by_reference_(other.by_reference_),
      records_(std::move(other.records_)), head_(other.head_), named_(other.named_) {}

  /// Writes `payload` into a fresh record: by reference where its blocks lie in the arena and
  /// the reader maps it, else its bytes (counted in copied_payload_bytes).
  shm_placed place(const wire_buffer& payload);

  /// Forgets the records the reader has released, front to back, and drops what they held
  /// (a message's lease): called by place() and by whoever learns the reader is done.
  void reclaim();

  std::size_t records_in_use() const;
  bool by_reference() const { return by_reference_; }
  /// Arena bytes that unreleased records name (at most the ring's size).
  std::size_t named_bytes() const;

private:
  struct record {
    std::size_t start;
    std::size_t end;
    wire_buffer keep;  // a message placed by reference: its blocks stay unchanged meanwhile
    std::size_t named = 0;  // arena bytes it names
  };
  void reclaim_locked();

  std::shared_ptr<shm_mapping> region_;
  bool by_reference_ = false;
  mutable std::mutex mutex_;
  std::deque<record> records_;
  std::size_t head_ = 0;
  std::size_t named_ = 0;  // sum of the records' named
};

/// The reader's side of one ring.
class shm_inbox {
public:
  /// `arena`: the writer's arena, mapped read-only where pieces lie, when it offered one (null:
  /// none).
  explicit shm_inbox(std::shared_ptr<shm_mapping> region,
                     std::shared_ptr<peer_arena> arena = nullptr)
    : region_(std::move(region)), arena_(std::move(arena)) {}

  /// The payload of `size` bytes at `offset` with `pieces` pieces (a frame's a, size and b) as
  /// a wire_buffer over the region (and the writer's arena), released to the writer when its
  /// last holder drops it; malformed_message when the peer's numbers do not describe a record
  /// inside the region, or pieces inside the record and arena that form a message's segments.
  caf::expected<wire_buffer> take(int64_t offset, uint64_t size, int64_t pieces = 0) const;

private:
  caf::expected<wire_buffer> take_pieces(uint8_t* payload, uint64_t size, int64_t pieces) const;

  std::shared_ptr<shm_mapping> region_;
  std::shared_ptr<peer_arena> arena_;
};

/// Both rings of one link end: what this side writes and what it reads.
struct shm_link {
  shm_ring out;
  shm_inbox in;
};

} // namespace actorps
