// Pending admission counts in a fixed number of bytes: a count-min sketch (Cormode and
// Muthukrishnan) of `depth` rows of one-byte counters, updated conservatively (a key's add
// raises only its counters below its new estimate), with TinyLFU's decay spread out: each add
// also halves the counter at a cursor that walks the whole array, so every counter halves once
// per `counters()` adds. The work of an add is fixed (depth counters and one halving) and
// depends only on the sequence of adds, never on time or on when anything else runs, so two
// tables given the same adds hold the same counters.
//
// An estimate never falls below a key's true count since its counters' last halving; it may
// exceed it where other keys share all its counters: a key can be admitted before its N-th
// push (a false admission). Each key's counters come from a hash seeded per table, so the keys
// that collide differ between tables.
//
//   admission_sketch sketch(1 << 20, /*seed=*/7);   // 1 MiB, counts up to 255
//   if (sketch.add(key) >= admit_after) admit(key);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// An admission_sketch's contents in the flat form a checkpoint stores.
struct admission_sketch_state {
  uint32_t depth = 0;            ///< counter rows
  uint64_t decay_at = 0;         ///< the counter the next add halves
  std::vector<uint8_t> counters; ///< depth × width, row after row
};

class admission_sketch {
public:
  /// Counter rows: four keeps false admissions rare at a few counters per key per row (see
  /// scripts/bench/README.md for the measured rate) without a fifth cache miss per add.
  static constexpr uint32_t default_depth = 4;
  /// The smallest budget: depth rows of 64 counters beyond the object itself.
  static constexpr std::size_t min_bytes = 1024;
  /// The largest count a counter holds (it saturates there).
  static constexpr uint32_t max_count = 255;

  /// A sketch whose memory_bytes() is at most `bytes` (>= min_bytes; std::invalid_argument
  /// otherwise). `seed` picks the hash.
  admission_sketch(std::size_t bytes, uint64_t seed);

  /// Counts one sighting of `key`; returns its estimated count, this one included (at most
  /// max_count).
  uint32_t add(uint64_t key);
  /// The estimated count of `key` (0 for a key never added, barring collisions).
  uint32_t estimate(uint64_t key) const;

  /// Counters that are not 0: an upper bound on the keys whose count the sketch holds.
  std::size_t nonzero() const;
  /// Bytes held: the object and its counters.
  std::size_t memory_bytes() const { return sizeof(*this) + counters_.capacity(); }
  std::size_t counters() const { return counters_.size(); }

  admission_sketch_state save() const;
  /// "" when `state` fits this sketch (same depth and counter count, cursor inside), else what
  /// differs; restore() then changes nothing.
  std::string mismatch(const admission_sketch_state& state) const;
  /// Replaces the counters and cursor with `state`'s; throws std::invalid_argument with
  /// mismatch()'s text when it does not fit.
  void restore(const admission_sketch_state& state);

private:
  /// The index in counters_ of the counter in `row` of a key whose hash is `hash`.
  std::size_t slot(uint64_t hash, uint32_t row) const;

  uint64_t seed_;
  uint32_t depth_ = default_depth;
  std::size_t width_ = 0;
  std::size_t decay_at_ = 0;
  std::vector<uint8_t> counters_;
};

} // namespace actorps
