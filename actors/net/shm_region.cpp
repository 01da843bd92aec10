#include "actors/net/shm_region.hpp"

#include "actors/protocol/errors.hpp"

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

caf::expected<std::shared_ptr<shm_mapping>> shm_mapping::map(int fd, std::size_t bytes) {
  auto refuse = [](const std::string& why) {
    return make_error(errc::malformed_message, "shared memory region: " + why);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return refuse(std::string("fstat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != bytes)
    return refuse("not a region of " + std::to_string(bytes) + " bytes");
  int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) return refuse("its size is not sealed");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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
  while (!records_.empty()
         && released_flag(region_->data() + records_.front().start)->load(std::memory_order_acquire))
    records_.pop_front();
  if (records_.empty()) head_ = 0;  // start over on the warm first pages
}

int64_t shm_ring::place(const wire_buffer& payload) {
  reclaim();
  const std::size_t need = shm_record_align + round_up(payload.size_bytes());
  const std::size_t cap = region_->size();
  std::size_t start = 0;
  if (records_.empty()) {
    if (need > cap) return -1;
    start = 0;
  } else {
    const std::size_t tail = records_.front().start;
    if (head_ > tail) {  // in use: [tail, head)
      if (head_ + need <= cap) start = head_;
      else if (need <= tail) start = 0;
      else return -1;
    } else {  // wrapped; in use: [tail, cap) and [0, head)
      if (head_ + need <= tail) start = head_;
      else return -1;
    }
  }
  uint8_t* rec = region_->data() + start;
  released_flag(rec)->store(0, std::memory_order_relaxed);
  uint8_t* out = rec + shm_record_align;
  for (const auto& p : payload.pieces()) {
    std::memcpy(out, p.data, p.bytes);
    out += p.bytes;
  }
  copied_payload_bytes += payload.size_bytes();
  std::atomic_thread_fence(std::memory_order_release);
  records_.push_back({start, start + need});
  head_ = start + need;
  return static_cast<int64_t>(start + shm_record_align);
}

// --- the reader -------------------------------------------------------------------------------

caf::expected<wire_buffer> shm_inbox::take(int64_t offset, uint64_t size) const {
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
  // Holds the mapping; when the last holder of the buffer drops it, the record goes back.
  struct hold {
    hold(std::shared_ptr<shm_mapping> r, uint8_t* at) : region(std::move(r)), record(at) {}
    ~hold() { released_flag(record)->store(1, std::memory_order_release); }
    std::shared_ptr<shm_mapping> region;
    uint8_t* record;
  };
  auto keep = std::make_shared<hold>(region_, record);
  std::shared_ptr<capnp::word[]> words(keep,
                                       reinterpret_cast<capnp::word*>(region_->data() + offset));
  return wire_buffer{std::move(words), size / sizeof(capnp::word)};
}

} // namespace actorps
