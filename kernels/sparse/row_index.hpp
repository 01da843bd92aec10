// row_index: a sparse table's map from uint64 key to row number, packed to 4 bytes a slot.
//
// The rows are numbered densely 0 … size() − 1 and the caller keeps each row's key (in the row
// itself: a probe that finds its row reads the key from the cache line the update or read
// loads anyway); every operation that needs a row's key takes `key_of(row)`. Inserting gives
// the next number (size()); erasing renumbers the last row into the erased one's number, as the
// caller moves the last row into the hole.
//
// Layout: one array of uint32 slots, open addressing with linear probing from a home slot
// (the top bits of a 64-bit hash scaled to the capacity, which need not be a power of two). A
// slot holds the row number in its low `row_bits` bits (as few as the capacity's rows need) and
// the rest of the key's hash in the high bits as a tag, so a probe reads the key of a row only
// when its tag matches: at 2^24 rows or fewer the tag has 8 bits or more (one false match in 256
// slots probed), at 2^28 rows 4 bits, at 2^32 none (correct, but every probed slot costs a key
// read). Two values are reserved: empty (all ones) and erased (all ones but the last bit).
//
// Load: between max_load / growth (0.55) and max_load (0.875) slots in use, so the index costs
// 4.6–7.3 bytes a row across a whole growth cycle (abseil's flat_hash_map<uint64_t, uint64_t>:
// 18.3–36.6). Growth is ×1.6 rather than ×2 for that: each growth reads every row's key, and
// over a cycle rows are rehashed 1.7 times their number (×2: once; ×1.4: 2.5 times, and a
// 10 M-row create pass measured 20 % slower than with ×2); reserve() grows at least as much, so
// that batches of inserts do not rehash each time. Slot arrays of 32 MiB and more are mapped on
// their own and advised onto 2 MiB pages.
//
// Erase leaves a tombstone (erased) rather than shifting the cluster back: a backward shift
// must know the home of every slot after the hole, that is read the key of its row (a cache
// miss each), while a tombstone costs nothing until the next rehash. Tombstones count toward
// the load: when rows and tombstones fill max_load of the slots, the index is rebuilt at the
// capacity that puts its rows (not the tombstones) at the growth cycle's lowest load, so probe
// lengths stay those of a table at most at max_load whatever the churn, and erase-heavy use
// shrinks the index too.
//
// Thread safety: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>

namespace actorps {

class row_index {
public:
  /// find()'s answer for a key without a row.
  static constexpr uint32_t npos = UINT32_MAX;
  /// The most rows: row numbers up to 2^32 − 3, below the two reserved slot values.
  static constexpr std::size_t max_size = std::size_t(UINT32_MAX) - 1;
  /// At most this share of the slots hold rows or tombstones (7/8).
  static constexpr std::size_t max_load_num = 7, max_load_den = 8;
  /// Each growth multiplies the capacity by this (8/5) at least.
  static constexpr std::size_t growth_num = 8, growth_den = 5;

  row_index() = default;
  row_index(row_index&&) noexcept = default;
  row_index& operator=(row_index&&) noexcept = default;

  /// Rows indexed.
  std::size_t size() const { return size_; }
  /// Slots allocated.
  std::size_t capacity() const { return capacity_; }
  /// Slots holding an erased row's tombstone.
  std::size_t tombstones() const { return tombstones_; }
  /// Bytes allocated: 4 a slot (rounded up to 4 KiB when the slots are mapped on their own).
  std::size_t memory_bytes() const { return slots_.get_deleter().bytes(capacity_); }

  /// `key`'s hash, for the *_hashed calls of a batched lookup: a mix of the key independent of
  /// bucket_of's (splitmix64_mix(key)), which picks the shard: a shard's keys share bucket_of's
  /// bits, they must not share their home slots.
  static uint64_t hash(uint64_t key) {
    uint64_t z = key ^ 0x6a09e667f3bcc909ull;
    z = (z ^ (z >> 32)) * 0xd6e8feb86659fd93ull;
    z = (z ^ (z >> 32)) * 0xd6e8feb86659fd93ull;
    return z ^ (z >> 32);
  }

  /// Brings the home slot of a key of hash `h` into cache (for a batch of lookups whose misses
  /// overlap).
  void prefetch(uint64_t h) const {
    if (capacity_ == 0) return;
    const uint32_t* at = slots_.get() + home(h);
    __builtin_prefetch(at);
    __builtin_prefetch(at + 15);  // the probe may run into the next cache line
  }

  /// The row a lookup of a key of hash `h` compares the key with first (the first slot from
  /// its home whose tag matches; npos: none), for the caller to bring into cache before find():
  /// in a batch, those misses overlap instead of each find() waiting for its own.
  uint32_t likely_row(uint64_t h) const {
    if (size_ == 0) return npos;
    const uint32_t want = tag(h);
    for (std::size_t at = home(h);; at = next(at)) {
      const uint32_t s = slots_[at];
      if (s == empty) return npos;
      if ((s ^ want) <= row_mask_ && s != erased) return s & row_mask_;
    }
  }

  /// `key`'s row, or npos.
  template <class KeyOf>
  uint32_t find(uint64_t key, KeyOf&& key_of) const {
    return find(key, hash(key), key_of);
  }
  /// The same with the key's hash(key) given.
  template <class KeyOf>
  uint32_t find(uint64_t key, uint64_t h, KeyOf&& key_of) const {
    const std::size_t at = find_slot(key, h, key_of);
    return at == no_slot ? npos : slots_[at] & row_mask_;
  }

  /// `key`'s row if it has one ({row, false}), else indexes it as row size() ({size(), true}),
  /// growing first if needed (which reads key_of(r) for every row r). The caller writes the new
  /// row's key before the next call. Throws std::length_error beyond max_size rows and
  /// std::bad_alloc (the index unchanged then).
  template <class KeyOf>
  std::pair<uint32_t, bool> insert(uint64_t key, KeyOf&& key_of) {
    return insert(key, hash(key), key_of);
  }
  /// The same with the key's hash(key) given.
  template <class KeyOf>
  std::pair<uint32_t, bool> insert(uint64_t key, uint64_t h, KeyOf&& key_of);

  /// Removes `key`'s row (false: it had none); the last row, if another, takes its number:
  /// reads key_of(size() − 1) before the caller moves that row.
  template <class KeyOf>
  bool erase(uint64_t key, KeyOf&& key_of);

  /// Room for `rows` rows in all without a rehash (reads key_of(r) for every row r if it
  /// rehashes). Grows to the growth cycle's lowest load for `rows` (as a rebuild), so that
  /// reserving a little more each time does not rehash each time, and rows taken in bulk are
  /// not followed at once by a rehash of them all.
  template <class KeyOf>
  void reserve(std::size_t rows, KeyOf&& key_of);

  /// Indexes rows size() … size() + count − 1, written already, whose keys key_of(r) are
  /// distinct and held by no row indexed (the caller knows: they are not looked up), growing
  /// first if needed; the slots' misses overlap as in a rehash. Throws as insert does (the
  /// index unchanged then).
  template <class KeyOf>
  void append(std::size_t count, KeyOf&& key_of);

  /// Replaces the contents with rows 0 … rows − 1, whose keys key_of(r) must be distinct.
  template <class KeyOf>
  void assign(std::size_t rows, KeyOf&& key_of);

  /// Slots a lookup of `key` examines (its home to its slot or the first empty one): for tests.
  template <class KeyOf>
  std::size_t probe_length(uint64_t key, KeyOf&& key_of) const;

private:
  static constexpr uint32_t empty = UINT32_MAX, erased = UINT32_MAX - 1;
  static constexpr std::size_t no_slot = SIZE_MAX;

  /// The hash's high bits scaled to the capacity (Lemire's multiply-shift, no division).
  std::size_t home(uint64_t h) const {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(h) * capacity_) >> 64);
  }
  /// The hash's low bits placed above the row number.
  uint32_t tag(uint64_t h) const { return static_cast<uint32_t>(h) & ~row_mask_; }
  std::size_t next(std::size_t at) const { return at + 1 == capacity_ ? 0 : at + 1; }

  /// Slots for `rows` rows at max_load.
  static std::size_t capacity_for(std::size_t rows);
  /// The capacity a rehash for `rows` rows picks: the growth cycle's lowest load for them.
  static std::size_t regrown(std::size_t rows);
  /// Frees a slot array: new[] below huge_bytes, its own mapping from there (on 2 MiB pages
  /// where the kernel has them: a lookup's slot then costs a cache miss, not also a TLB miss).
  struct slot_free {
    slot_free() noexcept : mapped(0) {}
    explicit slot_free(std::size_t length) noexcept : mapped(length) {}
    std::size_t mapped;  ///< the mapping's length; 0: from new[]
    void operator()(uint32_t* slots) const;
    std::size_t bytes(std::size_t capacity) const {
      return mapped > 0 ? mapped : capacity * sizeof(uint32_t);
    }
  };
  using slot_array = std::unique_ptr<uint32_t[], slot_free>;
  static constexpr std::size_t huge_bytes = std::size_t(32) << 20;
  /// A new slot array of `capacity` slots, all empty, with its row_bits; the index unchanged.
  struct table {
    slot_array slots;
    std::size_t capacity = 0, max_used = 0;
    uint32_t row_mask = 0;
  };
  static table allocate(std::size_t capacity);

  /// Inlined (GCC kept it out of find_block's loops: 13 % of a 100 k-row pass in calls).
  template <class KeyOf>
  __attribute__((always_inline)) inline std::size_t find_slot(uint64_t key, uint64_t h,
                                                             KeyOf& key_of) const;
  /// Puts row `row` (hash h) in the first empty or erased slot from its home.
  void place(uint64_t h, uint32_t row);
  /// Rebuilds at `capacity` from rows 0 … size() − 1: allocates first, so a throw leaves the
  /// index as it was.
  template <class KeyOf>
  void rehash(std::size_t capacity, KeyOf& key_of);

  slot_array slots_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  std::size_t tombstones_ = 0;
  std::size_t max_used_ = 0;  ///< rows and tombstones allowed: capacity × max_load
  uint32_t row_mask_ = 0;     ///< the low row_bits bits
};

template <class KeyOf>
inline std::size_t row_index::find_slot(uint64_t key, uint64_t h, KeyOf& key_of) const {
  if (size_ == 0) return no_slot;
  const uint32_t want = tag(h);
  for (std::size_t at = home(h);; at = next(at)) {
    const uint32_t s = slots_[at];
    if (s == empty) return no_slot;
    if ((s ^ want) <= row_mask_ && s != erased && key_of(s & row_mask_) == key) return at;
  }
}

template <class KeyOf>
std::pair<uint32_t, bool> row_index::insert(uint64_t key, uint64_t h, KeyOf&& key_of) {
  std::size_t hole = no_slot;
  if (capacity_ > 0) {
    const uint32_t want = tag(h);
    std::size_t at = home(h);
    for (;; at = next(at)) {
      const uint32_t s = slots_[at];
      if (s == empty) break;
      if (s == erased) {
        if (hole == no_slot) hole = at;
      } else if ((s ^ want) <= row_mask_ && key_of(s & row_mask_) == key) {
        return {s & row_mask_, false};
      }
    }
    if (hole == no_slot && size_ + tombstones_ < max_used_) hole = at;
  }
  if (size_ >= max_size) throw std::length_error("row_index: more than 2^32 - 2 rows");
  const auto row = static_cast<uint32_t>(size_);
  if (hole == no_slot) {  // full: rebuilt without tombstones, at the cycle's lowest load
    rehash(regrown(size_ + 1), key_of);
    place(h, row);
  } else {
    if (slots_[hole] == erased) --tombstones_;
    slots_[hole] = tag(h) | row;
  }
  ++size_;
  return {row, true};
}

template <class KeyOf>
bool row_index::erase(uint64_t key, KeyOf&& key_of) {
  const std::size_t at = find_slot(key, hash(key), key_of);
  if (at == no_slot) return false;
  const uint32_t row = slots_[at] & row_mask_;
  const auto last = static_cast<uint32_t>(size_ - 1);
  if (row != last) {
    const uint64_t moved_key = key_of(last);
    const std::size_t moved = find_slot(moved_key, hash(moved_key), key_of);
    slots_[moved] = (slots_[moved] & ~row_mask_) | row;
  }
  slots_[at] = erased;
  ++tombstones_;
  --size_;
  return true;
}

template <class KeyOf>
void row_index::reserve(std::size_t rows, KeyOf&& key_of) {
  if (rows + tombstones_ <= max_used_) return;
  const std::size_t want = regrown(rows), grown = regrown(size_);
  rehash(want > grown ? want : grown, key_of);
}

template <class KeyOf>
void row_index::append(std::size_t count, KeyOf&& key_of) {
  if (count > max_size - size_) throw std::length_error("row_index: more than 2^32 - 2 rows");
  reserve(size_ + count, key_of);
  const std::size_t first = size_;
  constexpr std::size_t ahead = 32;  // as in rehash
  uint64_t hashes[ahead];
  for (std::size_t r = 0; r < count + ahead; ++r) {
    if (r >= ahead) {
      place(hashes[r % ahead], static_cast<uint32_t>(first + r - ahead));
      ++size_;
    }
    if (r < count) {
      hashes[r % ahead] = hash(key_of(static_cast<uint32_t>(first + r)));
      __builtin_prefetch(slots_.get() + home(hashes[r % ahead]), 1);
    }
  }
}

template <class KeyOf>
void row_index::assign(std::size_t rows, KeyOf&& key_of) {
  table fresh = allocate(regrown(rows));
  slots_ = std::move(fresh.slots);
  capacity_ = fresh.capacity;
  max_used_ = fresh.max_used;
  row_mask_ = fresh.row_mask;
  tombstones_ = 0;
  size_ = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    place(hash(key_of(static_cast<uint32_t>(r))), static_cast<uint32_t>(r));
    ++size_;
  }
}

template <class KeyOf>
void row_index::rehash(std::size_t capacity, KeyOf& key_of) {
  table fresh = allocate(capacity);
  slots_ = std::move(fresh.slots);
  capacity_ = fresh.capacity;
  max_used_ = fresh.max_used;
  row_mask_ = fresh.row_mask;
  tombstones_ = 0;
  // Rows in order: their keys are read one after another; each row's home slot is prefetched
  // `ahead` rows before it is written, so that the misses overlap (prefetching a block and then
  // writing it left each write waiting: the rehashes took 40 % of a 10 M-row create pass).
  constexpr std::size_t ahead = 32;
  uint64_t hashes[ahead];
  for (std::size_t r = 0; r < size_ + ahead; ++r) {
    if (r >= ahead) place(hashes[r % ahead], static_cast<uint32_t>(r - ahead));
    if (r < size_) {
      hashes[r % ahead] = hash(key_of(static_cast<uint32_t>(r)));
      __builtin_prefetch(slots_.get() + home(hashes[r % ahead]), 1);
    }
  }
}

template <class KeyOf>
std::size_t row_index::probe_length(uint64_t key, KeyOf&& key_of) const {
  if (capacity_ == 0) return 0;
  const uint64_t h = hash(key);
  const uint32_t want = tag(h);
  std::size_t examined = 1;
  for (std::size_t at = home(h);; at = next(at), ++examined) {
    const uint32_t s = slots_[at];
    if (s == empty) return examined;
    if ((s ^ want) <= row_mask_ && s != erased && key_of(s & row_mask_) == key) return examined;
  }
}

} // namespace actorps
