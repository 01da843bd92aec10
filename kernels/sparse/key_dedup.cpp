#include "kernels/sparse/key_dedup.hpp"

#include <stdexcept>
#include <utility>

namespace actorps {

namespace {

struct keyed_position {
  uint64_t key;
  uint32_t position;  // in the batch's keys
};

constexpr int digit_bits = 8, digits = 64 / digit_bits, radix = 1 << digit_bits;

inline std::size_t digit(uint64_t key, int d) { return (key >> (d * digit_bits)) & (radix - 1); }

} // namespace

// (key, position) pairs sorted by key with a least-significant-digit radix sort, then one pass:
// equal keys are adjacent, so each distinct key is named once and every position gets its index.
// Was: std::sort of the keys, then a binary search per position; 0.86 -> 0.23 ms for a Criteo
// batch of 256 rows (6 656 keys): hashed keys made the sort's branches a coin
// toss. The pairs' two buffers are per thread, kept between batches as the outputs are.
void dedup_keys(const uint64_t* keys, std::size_t n, std::vector<uint64_t>& unique,
                std::vector<uint32_t>& inverse) {
  if (n >= (std::size_t(1) << 32)) throw std::length_error("dedup_keys: 2^32 keys or more");
  unique.clear();
  inverse.resize(n);
  if (n == 0) return;
  static thread_local std::vector<keyed_position> first, second;
  first.resize(n);
  second.resize(n);
  std::size_t count[digits][radix] = {};
  for (std::size_t i = 0; i < n; ++i) {
    first[i] = {keys[i], static_cast<uint32_t>(i)};
    for (int d = 0; d < digits; ++d) ++count[d][digit(keys[i], d)];
  }
  keyed_position* from = first.data();
  keyed_position* to = second.data();
  for (int d = 0; d < digits; ++d) {
    if (count[d][digit(keys[0], d)] == n) continue;  // every key has this digit: order kept
    std::size_t at[radix];
    std::size_t sum = 0;
    for (int v = 0; v < radix; ++v) {
      at[v] = sum;
      sum += count[d][v];
    }
    for (std::size_t i = 0; i < n; ++i) to[at[digit(from[i].key, d)]++] = from[i];
    std::swap(from, to);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (unique.empty() || unique.back() != from[i].key) unique.push_back(from[i].key);
    inverse[from[i].position] = static_cast<uint32_t>(unique.size() - 1);
  }
}

} // namespace actorps
