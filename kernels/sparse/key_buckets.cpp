#include "kernels/sparse/key_buckets.hpp"

#include "actors/ps/splitmix64.hpp"

#include <stdexcept>
#include <string>

namespace actorps {

uint32_t bucket_of(uint64_t key, uint32_t buckets) {
  if (buckets == 0) throw std::invalid_argument("bucket_of: the bucket count must be at least 1");
  return static_cast<uint32_t>(splitmix64_mix(key) % buckets);
}

std::vector<int32_t> assign_buckets(uint32_t buckets, int shards) {
  if (buckets == 0) {
    throw std::invalid_argument("assign_buckets: the bucket count must be at least 1");
  }
  if (shards < 1) {
    throw std::invalid_argument("assign_buckets: the shard count must be at least 1, got " +
                                std::to_string(shards));
  }
  if (static_cast<uint32_t>(shards) > buckets) {
    throw std::invalid_argument("assign_buckets: " + std::to_string(shards) +
                                " shards for only " + std::to_string(buckets) +
                                " buckets would leave a shard with none");
  }
  std::vector<int32_t> owner(buckets);
  for (uint32_t b = 0; b < buckets; ++b) {
    owner[b] = static_cast<int32_t>(b % static_cast<uint32_t>(shards));
  }
  return owner;
}

} // namespace actorps
