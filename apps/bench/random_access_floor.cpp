#include "apps/bench/random_access_floor.hpp"

#include "apps/bench/process_usage.hpp"
#include "actors/ps/splitmix64.hpp"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <vector>

namespace actorps {

namespace {

constexpr std::size_t ahead = 16, ring = 64, wrap = ring - 1;
constexpr std::size_t huge_bytes = std::size_t(32) << 20;

/// `bytes` of memory, advised onto 2 MiB pages from huge_bytes on.
struct mapping {
  explicit mapping(std::size_t bytes) : length(bytes) {
    at = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) throw std::bad_alloc();
    if (length >= huge_bytes) madvise(at, length, MADV_HUGEPAGE);
  }
  ~mapping() { munmap(at, length); }
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  void* at;
  std::size_t length;
};

} // namespace

double random_access_floor_ns(const random_access_floor_case& c,
                              const std::function<uint64_t(uint64_t)>& key_at) {
  if (c.rows == 0 || c.slots == 0 || c.row_floats == 0) return 0;
  mapping slot_memory(c.slots * sizeof(uint32_t));
  auto* slots = static_cast<uint32_t*>(slot_memory.at);
  for (uint64_t s = 0; s < c.slots; ++s) slots[s] = uint32_t(splitmix64_mix(s) % c.rows);
  // The rows on small pages, as a table's row pages are.
  std::vector<float> rows(c.rows * c.row_floats, 1.0f);
  std::vector<uint64_t> hashes(c.rows);  // outside the timed pass, as the table's keys are
  for (uint64_t i = 0; i < c.rows; ++i) hashes[i] = splitmix64_mix(key_at(i) ^ 0x9e3779b9u);
  const auto home = [&](uint64_t h) {
    return std::size_t((static_cast<unsigned __int128>(h) * c.slots) >> 64);
  };
  const std::size_t row_bytes = std::size_t(c.row_floats) * sizeof(float);
  const auto prefetch_row = [&](uint64_t h) {
    const char* row = reinterpret_cast<const char*>(rows.data() + std::size_t(slots[home(h)]) *
                                                                      c.row_floats);
    for (std::size_t offset = 0; offset < row_bytes && offset < 512; offset += 64)
      __builtin_prefetch(row + offset);
    __builtin_prefetch(row + row_bytes - 1);
  };
  std::vector<float> out(std::size_t(ring) * c.copy_floats);
  const double t0 = thread_cpu_s();
  for (uint64_t i = 0; i < c.rows; ++i) {
    if (i + 2 * ahead < c.rows) __builtin_prefetch(slots + home(hashes[i + 2 * ahead]));
    if (i + ahead < c.rows) prefetch_row(hashes[i + ahead]);
    const float* row = rows.data() + std::size_t(slots[home(hashes[i])]) * c.row_floats;
    std::memcpy(out.data() + (i & wrap) * c.copy_floats, row, c.copy_floats * sizeof(float));
  }
  const double spent = thread_cpu_s() - t0;
  volatile float sink = out[0];  // the copies are the pass's result
  (void)sink;
  return spent * 1e9 / double(c.rows);
}

} // namespace actorps
