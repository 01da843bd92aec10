#include "kernels/sparse/key_dedup.hpp"

#include <algorithm>
#include <stdexcept>

namespace actorps {

void dedup_keys(const uint64_t* keys, std::size_t n, std::vector<uint64_t>& unique,
                std::vector<uint32_t>& inverse) {
  if (n >= (std::size_t(1) << 32)) throw std::length_error("dedup_keys: 2^32 keys or more");
  unique.assign(keys, keys + n);
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  inverse.resize(n);
  for (std::size_t i = 0; i < n; ++i)  // binary search: n log u, no second hash table
    inverse[i] = static_cast<uint32_t>(std::lower_bound(unique.begin(), unique.end(), keys[i])
                                       - unique.begin());
}

} // namespace actorps
