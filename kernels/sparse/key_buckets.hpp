// Where a sparse key lives: a fixed hash puts every uint64 key in one of B virtual buckets, and
// a bucket → shard table puts every bucket on one of P shards. Shards own buckets, not keys, so
// a later change of P moves whole buckets (rows and all) instead of rehashing every key.
#pragma once

#include <cstdint>
#include <vector>

namespace actorps {

/// The bucket count a sparse table uses unless told otherwise.
constexpr uint32_t default_bucket_count = 4096;

/// The bucket of `key` among `buckets`: splitmix64_mix(key) mod buckets (actors/ps/splitmix64.hpp).
/// Integer arithmetic only, so every platform, process and restart agrees; keys that are
/// sequential, or differ only in high bits, still spread evenly. This function is part of the
/// checkpoint and wire contract: changing it moves every key. Throws std::invalid_argument when
/// `buckets` is 0.
uint32_t bucket_of(uint64_t key, uint32_t buckets);

/// The owner shard of each of `buckets` buckets among `shards` shards: bucket b goes to shard
/// b mod shards (round robin). Each shard therefore owns ⌊B/P⌋ or ⌈B/P⌉ buckets — the first
/// B mod P shards one more — and the same (B, P) always gives the same table. Throws
/// std::invalid_argument when buckets is 0, shards is below 1, or shards exceeds buckets (a
/// shard would own nothing).
std::vector<int32_t> assign_buckets(uint32_t buckets, int shards);

} // namespace actorps
