// A record in a shared-memory data link's ring (actors/link/shm_region.hpp) as a shard reads it:
// everything the peer process controls is the input, that is the frame's a, size and b (offset,
// bytes, pieces) and every byte of the ring and of its arena. The first byte picks the inbox: 0,
// one that maps the peer's arena (records of pieces); 1, one without. Then three 8-byte
// little-endian numbers, unscaled (negative and huge ones included): offset, size, pieces; the
// rest is written into the ring from offset 64 (a record whose header is at 0, its payload at
// 64) and the same bytes into the arena from 0, so that a piece can name bytes in either. A
// record that take() accepts is decoded as a push and its bytes walked and copied; every byte
// it names must lie in the record or the arena, and dropping it must release the record.
#include "actors/link/shm_region.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace actorps {
namespace {

constexpr std::size_t region_bytes = 64 * 1024;

[[noreturn]] void no_region(const std::string& why) {
  std::fprintf(stderr, "shm_record_fuzz: no shared memory region: %s\n", why.c_str());
  std::abort();
}

std::shared_ptr<shm_mapping> map(int fd, bool writable) {
  auto mapped = shm_mapping::map(fd, region_bytes, writable);
  if (!mapped) no_region(describe(mapped.error()));
  return *mapped;
}

int fresh_region() {
  std::string why;
  int fd = create_shm_region(region_bytes, why);
  if (fd < 0) no_region(why);
  return fd;
}

/// The ring, the arena (written here through a mapping of our own, read by the inbox through a
/// read-only one, as a shard maps its peer's) and the inbox with and without it: made once,
/// reused by every input.
struct link_end {
  std::shared_ptr<shm_mapping> ring, arena;
  std::shared_ptr<peer_arena> arena_view;
  std::unique_ptr<shm_inbox> with_arena, without;
  std::size_t ring_dirty = 0, arena_dirty = 0;  // what the last input wrote: zeroed for the next

  link_end() {
    int fd = fresh_region();
    ring = map(fd, true);
    ::close(fd);
    fd = fresh_region();
    arena = map(fd, true);
    auto view = peer_arena::open(fd);
    if (!view) no_region(describe(view.error()));
    arena_view = *view;
    ::close(fd);
    with_arena = std::make_unique<shm_inbox>(ring, arena_view);
    without = std::make_unique<shm_inbox>(ring);
  }
};

bool inside(const void* p, std::size_t n, const uint8_t* from, std::size_t bytes) {
  auto* b = static_cast<const uint8_t*>(p);
  return b >= from && n <= bytes && b - from <= std::ptrdiff_t(bytes - n);
}

uint64_t read_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

} // namespace
} // namespace actorps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace actorps;
  static link_end end;
  fuzz::selected in;
  if (!fuzz::select(data, size, 2, in) || in.size < 24) return 0;
  const auto offset = static_cast<int64_t>(read_u64(in.data));
  const uint64_t bytes = read_u64(in.data + 8);
  const auto pieces = static_cast<int64_t>(read_u64(in.data + 16));
  const uint8_t* body = in.data + 24;
  const std::size_t body_size = in.size - 24;

  std::memset(end.ring->data(), 0, end.ring_dirty);
  std::memset(end.arena->data(), 0, end.arena_dirty);
  const std::size_t in_ring = std::min(body_size, region_bytes - shm_record_align);
  const std::size_t in_arena = std::min(body_size, region_bytes);
  std::memcpy(end.ring->data() + shm_record_align, body, in_ring);
  std::memcpy(end.arena->data(), body, in_arena);
  end.ring_dirty = shm_record_align + in_ring;
  end.arena_dirty = in_arena;

  const auto& inbox = in.choice == 0 ? *end.with_arena : *end.without;
  const uint8_t* arena = end.arena_view->at(0, region_bytes);  // its one window: the file is small
  {
    auto taken = inbox.take(offset, bytes, pieces);
    if (!taken) return 0;
    // Accepted: every byte it names lies in the record's payload or in the arena.
    const uint8_t* payload = end.ring->data() + offset;
    std::size_t total = 0;
    unsigned sum = 0;
    for (const auto& p : taken->pieces()) {
      if (!inside(p.data, p.bytes, payload, bytes)
          && !(taken->is_gathered() && inside(p.data, p.bytes, arena, region_bytes)))
        std::abort();
      for (std::size_t i = 0; i < p.bytes; ++i) sum += static_cast<const uint8_t*>(p.data)[i];
      total += p.bytes;
    }
    if (total != taken->size_bytes()) std::abort();
    (void)decode_push(*taken);
    auto flat = taken->flat();
    if (flat.size_bytes() != total || flat.is_gathered()) std::abort();
    unsigned flat_sum = 0;
    for (std::size_t i = 0; i < total; ++i) flat_sum += flat.bytes()[i];
    if (flat_sum != sum) std::abort();
    (void)decode_push(flat);
    end.ring_dirty = std::max(end.ring_dirty, static_cast<std::size_t>(offset));
  }
  // Dropped: the record goes back to the writer.
  if (end.ring->data()[offset - shm_record_align] != 1) std::abort();
  return 0;
}
