#include "actors/link/shm_region.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/link_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace actorps {

namespace {

/// The released flag at the start of a record's header (shared memory, both processes).
std::atomic<uint32_t>* released_flag(uint8_t* record) {
  static_assert(std::atomic<uint32_t>::is_always_lock_free, "a flag shared between processes");
  return reinterpret_cast<std::atomic<uint32_t>*>(record);
}

std::size_t round_up(std::size_t n) { return (n + shm_record_align - 1) / shm_record_align * shm_record_align; }

} // namespace

caf::expected<std::shared_ptr<shm_mapping>> shm_mapping::map(int fd, std::size_t bytes,
                                                             bool writable) {
  auto refuse = [](const std::string& why) {
    return make_error(errc::malformed_message, "shared memory region: " + why);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return refuse(std::string("fstat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return refuse("not a memory file");
  if (bytes == 0 || static_cast<uint64_t>(st.st_size) != bytes) {
    return refuse("not a region of " + std::to_string(bytes) + " bytes");
  }
  int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) return refuse("its size is not sealed");
  void* p = ::mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                   MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) return refuse(std::string("mmap: ") + std::strerror(errno));
  return std::shared_ptr<shm_mapping>(new shm_mapping(static_cast<uint8_t*>(p), bytes));
}

shm_mapping::~shm_mapping() { ::munmap(data_, size_); }

int create_shm_region(std::size_t bytes, std::string& why) {
  int fd = ::memfd_create("actorps-link", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    why = std::string("memfd_create: ") + std::strerror(errno);
    return -1;
  }
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0
      || ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    why = std::string("sizing a memfd: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

// --- the writer -------------------------------------------------------------------------------

void shm_ring::reclaim() {
  std::deque<record> done;  // dropped outside the lock: a lease's last holder may free a buffer
  {
    std::lock_guard<std::mutex> guard{mutex_};
    while (!records_.empty()
           && released_flag(region_->data() + records_.front().start)->load(std::memory_order_acquire)) {
      named_ -= records_.front().named;
      done.push_back(std::move(records_.front()));
      records_.pop_front();
    }
    if (records_.empty()) head_ = 0;  // start over on the warm first pages
  }
}

std::size_t shm_ring::records_in_use() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return records_.size();
}

std::size_t shm_ring::named_bytes() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return named_;
}

shm_placed shm_ring::place(const wire_buffer& payload) {
  reclaim();
  // By reference: each segment that lies in the arena is named, the rest copied inline. (The
  // offsets are looked up again when the record is written rather than kept: no allocation.)
  auto pieces = payload.pieces();
  const bool may_name =
    by_reference_ && payload.is_gathered() && pieces.size() <= std::size_t(max_shm_pieces);
  auto arena_offset = [&](std::size_t i) -> int64_t {  // piece 0, the structure, stays inline
    if (i == 0) return -1;
    auto at = link_memory_offset(pieces[i].data, pieces[i].bytes);
    return at % int64_t(sizeof(capnp::word)) == 0 ? at : -1;
  };
  std::size_t named = 0;
  if (may_name)
    for (std::size_t i = 1; i < pieces.size(); ++i)
      if (arena_offset(i) >= 0) named += pieces[i].bytes;

  std::lock_guard<std::mutex> guard{mutex_};
  if (named_ + named > region_->size()) named = 0;  // held records name enough already: a copy
  const bool any = named > 0;
  const std::size_t table = any ? pieces.size() * sizeof(shm_piece) : 0;
  const std::size_t inline_bytes = payload.size_bytes() - named;
  const std::size_t size = table + inline_bytes;
  const std::size_t need = shm_record_align + round_up(size);
  const std::size_t cap = region_->size();
  std::size_t start = 0;
  if (records_.empty()) {
    if (need > cap) return {};
    start = 0;
  } else {
    const std::size_t tail = records_.front().start;
    if (head_ > tail) {  // in use: [tail, head)
      if (head_ + need <= cap) start = head_;
      else if (need <= tail) start = 0;
      else return {};
    } else {  // wrapped; in use: [tail, cap) and [0, head)
      if (head_ + need <= tail) start = head_;
      else return {};
    }
  }
  uint8_t* rec = region_->data() + start;
  released_flag(rec)->store(0, std::memory_order_relaxed);
  uint8_t* body = rec + shm_record_align;
  uint8_t* out = body + table;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const int64_t at = any ? arena_offset(i) : -1;
    if (any) {
      shm_piece d{at >= 0 ? 1u : 0u, at >= 0 ? uint64_t(at) : uint64_t(out - body), pieces[i].bytes};
      std::memcpy(body + i * sizeof(shm_piece), &d, sizeof d);
    }
    if (at >= 0) continue;
    std::memcpy(out, pieces[i].data, pieces[i].bytes);
    out += pieces[i].bytes;
  }
  copied_payload_bytes += inline_bytes;
  std::atomic_thread_fence(std::memory_order_release);
  records_.push_back({start, start + need, any ? payload : wire_buffer{}, named});
  named_ += named;
  head_ = start + need;
  return {static_cast<int64_t>(start + shm_record_align), size,
          any ? static_cast<int64_t>(pieces.size()) : 0};
}

// --- the reader -------------------------------------------------------------------------------

namespace {

/// Holds the mapping; when the last holder of the buffer drops it, the record goes back.
struct hold {
  hold(std::shared_ptr<shm_mapping> r, uint8_t* at, std::shared_ptr<peer_arena> a = nullptr)
    : region(std::move(r)), record(at), arena(std::move(a)) {}
  ~hold() { released_flag(record)->store(1, std::memory_order_release); }
  std::shared_ptr<shm_mapping> region;
  uint8_t* record;
  std::shared_ptr<peer_arena> arena;  // a record of pieces: the windows of the blocks it names
};

caf::error bad_record(const std::string& why) {
  return make_error(errc::malformed_message, "a record in shared memory: " + why);
}

} // namespace

caf::expected<wire_buffer> shm_inbox::take(int64_t offset, uint64_t size, int64_t pieces) const {
  const auto cap = static_cast<uint64_t>(region_->size());
  if (offset < static_cast<int64_t>(shm_record_align) || offset % shm_record_align != 0
      || static_cast<uint64_t>(offset) > cap || size == 0 || size % sizeof(capnp::word) != 0
      || size > cap - static_cast<uint64_t>(offset))
    return make_error(errc::malformed_message,
                      "a payload of " + std::to_string(size) + " bytes at offset "
                        + std::to_string(offset) + " of a shared region of "
                        + std::to_string(cap) + " bytes");
  std::atomic_thread_fence(std::memory_order_acquire);
  uint8_t* record = region_->data() + offset - shm_record_align;
  uint8_t* payload = region_->data() + offset;
  if (pieces != 0) {
    if (!arena_) return bad_record("pieces in an arena that was not offered");
    // The hold is made only for a well-formed record: a refused one is not released (the link
    // closes anyway).
    return take_pieces(payload, size, pieces);
  }
  auto keep = std::make_shared<hold>(region_, record);
  std::shared_ptr<capnp::word[]> words(keep, reinterpret_cast<capnp::word*>(payload));
  return wire_buffer{std::move(words), size / sizeof(capnp::word)};
}

/// Checks a record of pieces (shm_region.hpp) against the record and the arena and against the
/// segment table in piece 0, from one read of each number (the peer can write the region while
/// this runs: every check is on the copy read here), and builds the message over them.
caf::expected<wire_buffer> shm_inbox::take_pieces(uint8_t* payload, uint64_t size,
                                                  int64_t pieces) const {
  constexpr uint64_t word = sizeof(capnp::word);
  if (pieces < 2 || pieces > max_shm_pieces)
    return bad_record(std::to_string(pieces) + " pieces");
  const uint64_t table = uint64_t(pieces) * sizeof(shm_piece);
  if (table > size) return bad_record("a piece table beyond its record");
  std::vector<shm_piece> d(static_cast<std::size_t>(pieces));
  std::memcpy(d.data(), payload, table);
  uint64_t total = 0;
  const uint64_t arena_bytes = arena_->size();
  for (int64_t i = 0; i < pieces; ++i) {
    const auto& p = d[i];
    if (p.bytes == 0 || p.bytes % word != 0 || p.offset % word != 0 || p.in_arena > 1)
      return bad_record("piece " + std::to_string(i) + " is not whole words");
    if (p.in_arena ? (p.offset > arena_bytes || p.bytes > arena_bytes - p.offset)
                   : (p.offset < table || p.offset > size || p.bytes > size - p.offset))
      return bad_record("piece " + std::to_string(i) + " lies outside its "
                        + (p.in_arena ? "arena" : "record"));
    total += p.bytes;
  }
  if (d[0].in_arena) return bad_record("the structure is not in the record");
  if (total > max_wire_bytes) return bad_record(std::to_string(total) + " bytes");
  // The segment table (piece 0's first words): one segment per piece, of the piece's size.
  const uint64_t table_words = (uint64_t(pieces) + 2) / 2;
  if (d[0].bytes < (table_words + 1) * word) return bad_record("a structure without its segment table");
  std::vector<uint32_t> counts(static_cast<std::size_t>(pieces) + 1);
  std::memcpy(counts.data(), payload + d[0].offset, counts.size() * sizeof(uint32_t));
  if (uint64_t(counts[0]) + 1 != uint64_t(pieces)) return bad_record("segments and pieces differ");
  auto parts = std::make_shared<wire_buffer::gathered>();
  parts->table_words = table_words;
  parts->head_words = d[0].bytes / word;
  if (counts[1] != parts->head_words - table_words)
    return bad_record("segment 0 is not the rest of piece 0");
  for (int64_t i = 1; i < pieces; ++i) {
    if (counts[i + 1] != d[i].bytes / word) return bad_record("segment " + std::to_string(i) + " is not its piece");
    const uint8_t* at = d[i].in_arena ? arena_->at(d[i].offset, d[i].bytes) : payload + d[i].offset;
    if (at == nullptr) return bad_record("piece " + std::to_string(i) + " could not be mapped");
    parts->external.push_back(
      kj::arrayPtr(reinterpret_cast<const capnp::word*>(at), d[i].bytes / word));
  }
  uint8_t* record = payload - shm_record_align;
  auto keep = std::make_shared<hold>(region_, record, arena_);
  parts->head = std::shared_ptr<capnp::word[]>(keep, reinterpret_cast<capnp::word*>(payload + d[0].offset));
  parts->keep = std::move(keep);
  return wire_buffer{std::shared_ptr<const wire_buffer::gathered>(std::move(parts))};
}

} // namespace actorps
