#include "kernels/sparse/row_index.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace actorps {

std::size_t row_index::capacity_for(std::size_t rows) {
  // At least 8 slots: max_used stays below the capacity, so every probe ends at an empty slot.
  return std::max<std::size_t>(8, (rows * max_load_den + max_load_num - 1) / max_load_num);
}

std::size_t row_index::regrown(std::size_t rows) {
  return capacity_for((rows * growth_num + growth_den - 1) / growth_den);
}

namespace {

constexpr std::size_t small_page = 4096, huge_page = std::size_t(2) << 20;

std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }

} // namespace

void row_index::slot_free::operator()(uint32_t* slots) const {
  if (mapped > 0)
    munmap(slots, mapped);
  else
    delete[] slots;
}

row_index::table row_index::allocate(std::size_t capacity) {
  table t;
  const std::size_t bytes = capacity * sizeof(uint32_t);
  if (bytes < huge_bytes) {
    // Left to new[] without value-initialisation, then set to empty (all ones) in one pass.
    t.slots = slot_array(new uint32_t[capacity]);
  } else {
    // A mapping of its own starting on a 2 MiB boundary: map 2 MiB more, cut the ends off.
    const std::size_t length = round_up(bytes, small_page);
    void* at = mmap(nullptr, length + huge_page, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<uintptr_t>(at);
    const uintptr_t aligned = round_up(start, huge_page);
    if (aligned > start) munmap(at, aligned - start);
    munmap(reinterpret_cast<void*>(aligned + length), start + huge_page - aligned);
    madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);  // advice: may be refused
    t.slots = slot_array(reinterpret_cast<uint32_t*>(aligned), slot_free(length));
  }
  std::memset(t.slots.get(), 0xff, capacity * sizeof(uint32_t));
  t.capacity = capacity;
  t.max_used = std::min(capacity * max_load_num / max_load_den, max_size);
  // Row numbers below max_used must stay below the two reserved values' row bits.
  uint32_t bits = 1;
  while (bits < 32 && (uint64_t(1) << bits) < uint64_t(t.max_used) + 2) ++bits;
  t.row_mask = bits == 32 ? UINT32_MAX : (uint32_t(1) << bits) - 1;
  return t;
}

void row_index::place(uint64_t h, uint32_t row) {
  std::size_t at = home(h);
  while (slots_[at] != empty && slots_[at] != erased) at = next(at);
  if (slots_[at] == erased) --tombstones_;
  slots_[at] = tag(h) | row;
}

} // namespace actorps
