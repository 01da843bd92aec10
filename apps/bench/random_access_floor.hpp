// The least a read of a hashed table costs on this machine, for comparison with the table's
// own read pass: per key one 4-byte slot at a random place in an index, then the row that slot
// names, each brought into cache in a pipeline (slots 2 × 16 keys ahead, rows 16 keys ahead)
// and the row's first floats copied out. No probing, no key comparison, no bounds: what any
// table whose rows lie apart from its index pays in memory alone. A wire whose server stores
// nothing (ps-lite's benchmark) pays none of it.
#pragma once

#include <cstdint>
#include <functional>

namespace actorps {

struct random_access_floor_case {
  uint64_t rows = 0;         ///< rows of the table, and keys read (each once)
  uint32_t row_floats = 0;   ///< floats a row takes in memory (metadata and state included)
  uint32_t copy_floats = 0;  ///< floats copied out of each row (its dim)
  /// Slots of the index (above 32 MiB on 2 MiB pages, as row_index maps them).
  uint64_t slots = 0;
};

/// Nanoseconds of this thread's CPU time per key for one pass over `c.rows` keys, the i-th
/// hashed from key_at(i).
double random_access_floor_ns(const random_access_floor_case& c,
                              const std::function<uint64_t(uint64_t)>& key_at);

} // namespace actorps
