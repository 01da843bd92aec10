// A minibatch's keys of one table, de-duplicated on the worker: each distinct key is pulled and
// pushed once, and its gradient row is the sum over every place the batch used it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace actorps {

/// Replaces `unique` with the distinct keys of keys[0, n) in ascending order and `inverse` with,
/// for each keys[i], its index in `unique` (so keys[i] == unique[inverse[i]]). Capacity is kept
/// for the next batch. Throws std::length_error for n ≥ 2^32.
void dedup_keys(const uint64_t* keys, std::size_t n, std::vector<uint64_t>& unique,
                std::vector<uint32_t>& inverse);

} // namespace actorps
