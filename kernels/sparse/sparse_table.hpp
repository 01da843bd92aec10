// One sparse table's rows on one shard: uint64 keys, each a row of `dim` floats created on its
// first push (or its N-th, with admission), with its own optimizer state.
//
// Layout: rows in fixed-size pages of one contiguous block each (a power of two rows a page, at
// most 32 KiB); a row is 16 bytes of metadata — its key, the global clock of its last push and
// its touch count — then its dim values and its optimizer state (row_state_slots × dim floats,
// slot after slot). Pages rather than one growing vector: a 10 M-row table never copies its 1+
// GB of rows to grow (no second copy in memory, no half-second stall inside one apply), and at
// most one page is allocated but unused. A row_index (row_index.hpp: 4-byte slots, load 0.55–
// 0.875) maps each key to its row number; the key itself lives in the row, in the cache line a
// lookup loads anyway. Beyond the floats and optimizer state a row costs 16 bytes in its page
// and 4.6–7.3 in the index: 20.6–23.4 in all across growth cycles (24 at most, tested).
//
// Clock and touch count are the row's metadata (8 bytes), kept in checkpoints. With eviction
// (evict_after > 0) a row stale at a clock counts as gone for every read, push and export at
// that clock, so results do not depend on when memory is reclaimed: sweep() removes stale rows,
// a bounded number a call, keeping the rows dense (the last row moves into the hole; pages no
// longer needed are freed).
//
// Thread safety: none; one owner (a shard actor) calls everything.
//
//   sparse_table_config cfg;
//   cfg.dim = 16;
//   cfg.init = row_init::normal;
//   cfg.scale = 0.01f;
//   sparse_table table(cfg, /*seed=*/42, /*table=*/0);
//   if (auto at = find_duplicate(keys, n)) refuse(*at);  // apply wants unique keys
//   table.apply(keys, n, grads, 1.0f);                    // creates rows on first push
//   table.read(keys, n, out);                             // never creates rows
#pragma once

#include "actors/ps/sparse_table_config.hpp"
#include "kernels/sparse/admission_sketch.hpp"
#include "kernels/sparse/row_index.hpp"
#include "kernels/sparse/row_optimizer.hpp"
#include "kernels/value_bounds.hpp"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace actorps {

/// One table's contents in the flat form a checkpoint stores. import_rows(export_rows())
/// gives back a table that reads and updates bit for bit like the original.
struct sparse_table_rows {
  std::vector<uint64_t> keys;            ///< strictly ascending
  std::vector<float> values;             ///< keys.size() × dim, in key order
  std::vector<float> state;              ///< keys.size() × slots × dim, in key order
  std::vector<uint32_t> touches;         ///< pushes that reached each key, admission included
  std::vector<uint32_t> steps;           ///< Adam's per-row step; empty for other optimizers
  std::vector<uint64_t> pending_keys;    ///< strictly ascending, keys not admitted yet
  std::vector<uint32_t> pending_counts;  ///< pushes counted so far, in [1, admit_after)
  /// The global clock of each pending key's last push; empty unless the table evicts
  /// (evict_after), or from a checkpoint without them (import_rows takes its clock then).
  std::vector<uint32_t> pending_clocks;
  /// With admission_memory: the sketch holding the pending counts (pending_keys empty then);
  /// depth 0: none.
  admission_sketch_state sketch;
  /// The global clock of each key's last push (row metadata); empty: not recorded (a
  /// checkpoint written before rows had it), import_rows then takes the clock it is given.
  std::vector<uint32_t> clocks;
  /// A delta's tombstones (delta_of): strictly ascending keys that had a row and have none
  /// any more (evicted), none of them among `keys`. Always empty in a whole table's export.
  std::vector<uint64_t> removed_keys;
  /// A delta's pending entries are only those counted since its clock (pending_changes_only),
  /// and removed_pending its tombstones for pending keys: strictly ascending keys counted
  /// before and dropped since (quiet for evict_after), none of them among `pending_keys`.
  /// false and empty in a whole table's export (and in deltas whose admission state is whole).
  bool pending_changes_only = false;
  std::vector<uint64_t> removed_pending;
};

/// An array read where it lies (a message's Data field, or a vector's contents).
template <class T>
struct array_in {
  const T* data = nullptr;
  std::size_t size = 0;  ///< entries
  const T& operator[](std::size_t i) const { return data[i]; }
  const T* begin() const { return data; }
  const T* end() const { return data + size; }
  bool empty() const { return size == 0; }
};

/// A table's rows as sparse_table_rows holds them, without the admission sketch, read in place
/// (a move's part in its message): each array as sparse_table_rows's namesake, checked as that.
struct sparse_rows_in {
  array_in<uint64_t> keys;
  array_in<float> values, state;
  array_in<uint32_t> touches, steps, clocks;
  array_in<uint64_t> pending_keys;
  array_in<uint32_t> pending_counts, pending_clocks;
};

/// `rows`'s arrays in place (they must outlive the result).
sparse_rows_in rows_in(const sparse_table_rows& rows);

/// Folds `delta` (a delta_of of the table `base` is an export of, at its clock or later) into
/// `base`: its tombstones' rows go, its rows replace or join base's (keys stay ascending), and
/// its admission state replaces base's: the sketch whole; the exact pending entries whole, or
/// with pending_changes_only merged (base's entries of keys the delta has as rows, tombstones
/// or pending tombstones go, the delta's replace or join them). `dim` and
/// `slots` (row_state_slots) describe the rows; `counts_steps` (row_counts_steps): they carry
/// a step per row. Throws
/// std::invalid_argument naming the first array whose size does not match.
void apply_delta_rows(sparse_table_rows& base, const sparse_table_rows& delta, uint32_t dim,
                      uint32_t slots, bool counts_steps);

/// What one sparse_table::sweep call did.
struct sweep_result {
  std::size_t examined = 0;  ///< rows looked at
  std::size_t evicted = 0;   ///< of those, removed
  std::size_t pending_dropped = 0;  ///< pending admission counts removed (quiet for evict_after)
  bool pass_done = false;    ///< the pass reached the last row (the next call starts over)
};

/// The index of the first key in keys[0, n) equal to an earlier one, or nullopt if all are
/// unique. For the caller's validation of a push before apply().
std::optional<std::size_t> find_duplicate(const uint64_t* keys, std::size_t n);

/// The values `key`'s row starts with (cfg.dim floats into out): a splitmix64 stream seeded by
/// splitmix64_mix(splitmix64_mix(splitmix64_mix(seed) ^ table) ^ key), so the same key starts
/// with the same values on any shard, in any insertion order, after any restart. uniform:
/// (2u − 1)·scale with u on a 2^-24 grid (exact on every platform); normal: Box–Muller in
/// double (log, cos and sin may differ in the last double bit between C libraries, which
/// rarely reaches the float).
void initial_row_values(const sparse_table_config& cfg, uint64_t seed, uint32_t table,
                        uint64_t key, float* out);

class sparse_table {
public:
  /// Throws std::invalid_argument naming the problem: dim 0, a negative or non-finite scale,
  /// or an optimizer setting out of range (validate_row_optimizer).
  sparse_table(const sparse_table_config& cfg, uint64_t seed, uint32_t table);

  const sparse_table_config& config() const { return cfg_; }

  /// Rows that exist (admitted keys).
  std::size_t rows() const { return index_.size(); }
  /// Keys pushed but not admitted yet: the exact counters held, or with a sketch
  /// (admission_memory) its counters that are not 0 divided by its depth (an estimate).
  std::size_t pending() const;
  /// Bytes the pending admission counts hold: the exact counters' map and arrays, or the sketch
  /// (never beyond admission_memory).
  std::size_t admission_bytes() const;
  /// The most rows the table has held at once (since it was made or imported into).
  std::size_t peak_rows() const { return peak_rows_; }
  /// Rows evicted so far: removed by sweep(), or found stale by a push and created anew.
  uint64_t evicted() const { return evicted_; }
  /// Whether the config asks for eviction (evict_after or max_rows).
  bool evicting() const { return cfg_.evict_after > 0 || cfg_.max_rows > 0; }

  /// Bytes this table holds: allocated pages, the row index's slots, the pending counts' map,
  /// the step counters and the object itself (not malloc's own headers).
  std::size_t memory_bytes() const;

  /// Writes n × dim floats to out: each key's current values. A key without a row reads as
  /// the values it would start with (initial_row_values), or as zeros while admission is on
  /// (admit_after > 1). Never creates a row or counts a push. `now`: the global clock of the
  /// read; a row stale at it (evict_after) reads as a key without a row. `parts` > 1: the keys
  /// are read in that many contiguous parts at once, each on a thread (parallel_parts.hpp).
  void read(const uint64_t* keys, std::size_t n, float* out, int64_t now = 0,
            std::size_t parts = 1) const;

  /// The largest |value| a row may take (value_bounds.hpp; default default_max_parameter).
  /// Throws std::invalid_argument for a bound that is not positive and finite.
  void set_max_parameter(float bound);
  float max_parameter() const { return max_parameter_; }

  /// Applies one push: grads holds n × dim floats, row i's gradient for keys[i]. Keys must be
  /// unique (check with find_duplicate; a repeated key is updated once per occurrence) and the
  /// gradients finite (the caller's all_finite). Creates missing rows subject to admission,
  /// counts the push on every key, then updates each row with learning rate
  /// cfg.optimizer.learning_rate × lr_scale. A row whose update would leave a value beyond
  /// max_parameter() or a non-finite state keeps its values, state, step and touch count (a
  /// new row: its initial ones); returns how many rows were refused so. Rows are independent
  /// parameters: the push's other rows apply. Throws std::invalid_argument for a negative or
  /// non-finite lr_scale (nothing changed); std::length_error past 2^32 − 2 rows and
  /// std::bad_alloc leave the push partly applied (every row whole, every key counted once).
  /// `clock`: the global clock of the push, recorded as each updated row's last (a row keeps a
  /// later one). A row stale at `clock` is evicted first: without admission it starts over in
  /// place (initial values and state, touch count and Adam's step 0), with admission its key
  /// is counted anew like one never seen. `parts` > 1: the rows found are updated in that many
  /// contiguous parts of the keys at once, each on a thread (parallel_parts.hpp), with the same
  /// result, provided the keys are unique (a repeat in two parts would race); a table that
  /// evicts, or copies rows ahead, updates on one. The new keys' rows are created on this
  /// thread after.
  std::size_t apply(const uint64_t* keys, std::size_t n, const float* grads, float lr_scale,
                    int64_t clock = 0, std::size_t parts = 1);

  /// Removes rows stale at global clock `now` (evict_after), and with max_rows the least
  /// recently pushed beyond it, then the exact pending admission counts not pushed for
  /// evict_after clocks, looking at no more than `budget` rows and counts: one step of a pass
  /// over every row and count that goes on where the previous call stopped. With max_rows, each
  /// pass finds the clock that about `rows() - max_rows` rows were last pushed before, and the
  /// next pass evicts those (so the bound holds within one pass, approximately). Does nothing
  /// without eviction.
  sweep_result sweep(int64_t now, std::size_t budget);

  /// The whole table, keys ascending; without rows stale at global clock `now`.
  sparse_table_rows export_rows(int64_t now = 0) const;

  /// A delta of `whole` (this table's export_rows(then), taken earlier or now) since global
  /// clock `since`: its rows whose last push is at `since` or later, tombstones for the keys not
  /// in it that were removed (or started over) at `since` or later (with track_removed) or whose
  /// rows were stale at `then`; its exact pending entries counted at `since` or later, with
  /// tombstones for the pending keys not in it that were dropped at `since` or later (with
  /// track_removed) or were stale at `then` (pending_changes_only); and the sketch whole. A push
  /// at clock `since` may have come before or after the state at `since` was taken: its rows
  /// and counts are included either way (written twice at worst).
  sparse_table_rows delta_of(sparse_table_rows whole, int64_t since, int64_t then) const;
  /// delta_of(export_rows(now), since, now) without exporting the whole table: the rows are
  /// chosen by their last push's clock and only those copied (and sorted), so that the cost
  /// beyond one look at each row's clock follows what changed, not the table's size.
  sparse_table_rows changed_rows(int64_t since, int64_t now) const;

  /// Whether the table remembers the keys it removes or starts over, and the exact pending
  /// entries it drops (and the clock of each) for delta_of; off by default, and forgetting what
  /// it held when turned off.
  void track_removed(bool on);
  /// Forgets the removals before global clock `before` (a delta since then needs none of them).
  void forget_removed(int64_t before);
  /// Removals remembered, rows and pending entries (for tests and the stats).
  std::size_t removed_remembered() const { return removed_.size() + removed_pending_.size(); }

  // --- buckets that change shard (a live resize): rows out of one table, into another ---

  /// Which keys a move concerns (a bucket placement's test: does the key's new shard differ).
  using key_filter = bool (*)(uint64_t key, const void* context);

  /// The rows and exact pending counts of the keys `moving` picks, as export_rows writes them
  /// (keys ascending, rows stale at `now` left out) with the admission sketch whole (it cannot
  /// be split by key).
  sparse_table_rows export_rows_of(key_filter moving, const void* context, int64_t now = 0) const;

  /// Where a move sends a key: the index of its part, or -1 where it stays.
  using key_part = int32_t (*)(uint64_t key, const void* context);

  /// export_rows_of split by destination in one pass: part p holds the rows and exact pending
  /// counts of the keys `part` sends to p (p < parts), each part as export_rows writes it, none
  /// with the sketch (admission_state has it): what a shard hands over when those keys'
  /// buckets go to other shards, addressed to each.
  std::vector<sparse_table_rows> export_parts(key_part part, const void* context,
                                              std::size_t parts, int64_t now = 0) const;

  /// One part of export_parts before it is copied: its rows as (key, row number) in key order,
  /// and its pending counts written out (pending_keys, pending_counts, pending_clocks only).
  struct picked_rows {
    std::vector<std::pair<uint64_t, uint32_t>> rows;
    sparse_table_rows pending;
    /// pick_after_copy only: keys copied ahead that are no rows here any more (ascending).
    std::vector<uint64_t> gone;
  };
  /// export_parts's picking: each part's rows and pending counts, the rows not copied yet.
  std::vector<picked_rows> pick_parts(key_part part, const void* context, std::size_t parts,
                                      int64_t now = 0) const;
  /// Where copy_rows writes rows: arrays of as many entries as rows (values dim floats each,
  /// state slots × dim, steps only where the optimizer counts them: else null).
  struct rows_out {
    uint64_t* keys;
    float* values;
    float* state;
    uint32_t* touches;
    uint32_t* steps;
    uint32_t* clocks;
  };
  /// Copies picked rows (pick_parts's, of this table unchanged since) into `out`, as
  /// export_rows writes them.
  void copy_rows(const std::vector<std::pair<uint64_t, uint32_t>>& rows,
                 const rows_out& out) const;
  /// Whether rows carry Adam's step (copy_rows writes steps).
  bool counts_steps() const { return counts_steps_; }
  /// The admission sketch alone (depth 0 without one), as export_rows writes it.
  admission_sketch_state admission_state() const;

  // --- copying ahead: the moving rows copied while the table goes on changing, then only
  // what changed since forwarded at the move ---

  /// Starts a copy ahead at global clock `since`: no row is marked copied yet (what an earlier
  /// copy marked is forgotten).
  void begin_copy(int64_t since);
  /// Whether a copy ahead is under way, and the clock it began at.
  bool copying() const { return copying_; }
  int64_t copy_since() const { return copy_since_; }
  /// One bounded step of the copy: the rows [cursor, cursor + budget) that `part` sends to a
  /// part (< parts), not stale at `now` and not copied yet, picked and marked copied (each part
  /// in key order, pending counts left out); `cursor` moves on. A row keeps its mark when
  /// another row's removal moves it. No key is picked twice (one copied, removed and created
  /// again waits for pick_after_copy), so that the copies may be taken without a lookup. Done
  /// when cursor reaches rows().
  std::vector<picked_rows> pick_copy(key_part part, const void* context, std::size_t parts,
                                     uint32_t& cursor, std::size_t budget, int64_t now) const;
  /// At the move, after a copy ahead: as pick_parts, but of the rows only those not copied or
  /// changed since their copy, and in `gone` the copied keys that are no live rows here now
  /// (removed since, or stale at `now`). Taken on top of the copies
  /// (remove_keys(gone), put_rows(rows), the pending counts) it gives pick_parts's rows.
  std::vector<picked_rows> pick_after_copy(key_part part, const void* context, std::size_t parts,
                                           int64_t now) const;
  /// Ends a copy ahead: the marks and what they remembered are forgotten.
  void end_copy();

  /// Removes the rows of `keys` held here (handed over, as drop_rows_of); others are ignored.
  std::size_t remove_keys(const uint64_t* keys, std::size_t count);
  /// Writes `rows` (no pending counts, no sketch) over the rows of their keys, creating those
  /// not held (each with its values, state, touches, Adam's step and clock; rows without clocks
  /// at `clock`). Throws std::invalid_argument as take_rows, the table unchanged then.
  void put_rows(const sparse_rows_in& rows, int64_t clock = 0);
  /// Moves every row of `other` (a table of the same config holding none of this one's keys,
  /// without pending counts) into this one; `other` is left empty.
  void take_all(sparse_table& other);

  /// Removes the rows and exact pending counts of the keys `moving` picks (handed over: not
  /// counted as evicted, not remembered for deltas); returns how many rows went.
  std::size_t drop_rows_of(key_filter moving, const void* context);

  /// Adds `rows` (export_rows_of of another shard's table: keys this one holds neither as rows
  /// nor as pending counts) to this table, each row with its values, optimizer state, touches,
  /// Adam's step and clock (rows without clocks take `clock`); a sketch in `rows` replaces this
  /// table's (the caller merged every sketch that counted keys now here), rows without one
  /// (export_parts) leave it as it is. Throws
  /// std::invalid_argument naming the first mismatch (as import_rows) or a key held already;
  /// the table is unchanged then.
  void take_rows(const sparse_table_rows& rows, int64_t clock = 0);
  /// The same of rows read in place, without a sketch (this table's stays). With `known_new`
  /// the caller vouches that no key is held here (each came from a bucket this shard did not
  /// own), and they are not looked up first.
  void take_rows(const sparse_rows_in& rows, int64_t clock = 0, bool known_new = false);

  /// Replaces the table's contents with `rows`. Throws std::invalid_argument naming the first
  /// mismatch (array sizes against dim and the optimizer's slots, keys not strictly ascending,
  /// a pending key that is also a row, a pending count outside [1, admit_after), a sketch
  /// missing, present or of another size than admission_memory makes); the table is
  /// unchanged then. Rows without recorded clocks take `clock` as their last push's.
  void import_rows(const sparse_table_rows& rows, int64_t clock = 0);

private:
  /// A pending key's count and, when the table evicts (pending_clocked), its place in
  /// pending_keys_ and pending_clocks_, which hold its last push's clock; otherwise that clock
  /// itself (for delta_of). 16 bytes a slot, as a bare uint32 count would take: the clock costs
  /// nothing.
  struct pending_ref {
    uint32_t count;
    uint32_t index;  ///< pending_clocked(): the place; otherwise the last push's clock
  };

  /// Floats of metadata at the start of each row: its key (2), last clock, touch count.
  static constexpr uint32_t meta_floats = 4;

  /// Row `index`'s first float (its metadata).
  float* row_start(uint32_t index) {
    return pages_[index >> page_shift_].get() + std::size_t(index & page_mask_) * stride_;
  }
  const float* row_start(uint32_t index) const {
    return pages_[index >> page_shift_].get() + std::size_t(index & page_mask_) * stride_;
  }
  /// Row `index`'s values, then its optimizer state.
  float* row(uint32_t index) { return row_start(index) + meta_floats; }
  const float* row(uint32_t index) const { return row_start(index) + meta_floats; }
  uint64_t row_key(uint32_t index) const {
    uint64_t key;
    std::memcpy(&key, row_start(index), sizeof key);
    return key;
  }
  /// Row `index`'s last clock.
  uint32_t row_clock(uint32_t index) const { return meta(index, 2); }
  void set_row_clock(uint32_t index, uint32_t clock) { set_meta(index, 2, clock); }
  /// Pushes that reached row `index`'s key, admission included.
  uint32_t row_touches(uint32_t index) const { return meta(index, 3); }
  void set_row_touches(uint32_t index, uint32_t touches) { set_meta(index, 3, touches); }
  uint32_t meta(uint32_t index, uint32_t at) const {
    uint32_t value;
    std::memcpy(&value, row_start(index) + at, sizeof value);
    return value;
  }
  void set_meta(uint32_t index, uint32_t at, uint32_t value) {
    std::memcpy(row_start(index) + at, &value, sizeof value);
  }
  /// The row index's key_of: each row's key, from the row.
  auto key_of() const {
    return [this](uint32_t index) { return row_key(index); };
  }
  /// apply() looks keys up this many at a time (find_block).
  static constexpr std::size_t lookup_block = 16;

  /// Each key's row (row_index::npos: none), with the metadata and first `row_floats` floats
  /// of each row found (and Adam's step) brought into cache.
  void find_block(const uint64_t* keys, std::size_t count, uint32_t row_floats,
                  uint32_t* found) const;
  /// A read's lookups run this many keys ahead of its copies (read()).
  static constexpr std::size_t read_ahead = 16;
  /// Prefetches the metadata and first `floats` floats of the row a key of hash `h` likely
  /// has (read()'s second stage).
  void prefetch_row(uint64_t h, uint32_t floats) const;
  /// Whether row `index` is stale at global clock `now` (evict_after).
  bool stale(uint32_t index, uint32_t now) const {
    const uint32_t last = row_clock(index);
    return cfg_.evict_after > 0 && now > last && now - last > cfg_.evict_after;
  }
  /// Whether exact pending counts keep their keys and last clocks (for evict_after).
  bool pending_clocked() const { return cfg_.evict_after > 0 && !sketch_; }
  /// The global clock of a pending entry's last push.
  uint32_t pending_clock(const pending_ref& ref) const {
    return pending_clocked() ? pending_clocks_[ref.index] : ref.index;
  }
  /// Whether pending entry `index` is stale at global clock `now` (evict_after).
  bool pending_stale(uint32_t index, uint32_t now) const {
    const uint32_t last = pending_clocks_[index];
    return now > last && now - last > cfg_.evict_after;
  }
  /// Counts one push of `key`, which has no row, toward its admission; returns the count, this
  /// push included, and with exact counts sets `entry` to the key's pending entry.
  uint32_t count_pending(uint64_t key, absl::flat_hash_map<uint64_t, pending_ref>::iterator& entry);
  /// Removes an exact pending entry; the last entry of the arrays takes its place.
  void erase_pending(absl::flat_hash_map<uint64_t, pending_ref>::iterator entry);
  /// Removes row `index` (its key from the index) at global clock `clock`; the last row takes
  /// its place.
  void remove_row(uint32_t index, uint32_t clock);
  /// remove_row without counting it as evicted or remembering it for deltas (a move).
  void unlink_row(uint32_t index);
  /// The rows of `by_key` (ascending keys) as export_rows writes them, without the admission
  /// state.
  sparse_table_rows export_indices(const std::vector<std::pair<uint64_t, uint32_t>>& by_key) const;
  /// Checks `in` as import_rows takes it (sizes, order, admission) with `sketch` (null: none
  /// given, as in a move's part); throws naming the mismatch.
  void check_rows(const sparse_rows_in& in, const admission_sketch_state* sketch,
                  const char* who) const;
  /// take_rows once `in` is checked: throws only where a key is held already (unless
  /// known_new) or the table is full, and the table is unchanged then.
  void take_checked(const sparse_rows_in& in, int64_t clock, bool known_new);
  /// The admission state (pending keys, counts and clocks, the sketch), whole, as every export
  /// writes it; pending entries stale at global clock `at` left out.
  void export_admission(sparse_table_rows& out, uint32_t at) const;
  /// `entries` (pending keys and where their counts are) written into `out` in key order.
  void write_pending(sparse_table_rows& out,
                     std::vector<std::pair<uint64_t, pending_ref>>& entries) const;
  /// Room in the per-row arrays for `more` rows, before the index changes.
  void reserve_rows(std::size_t more);
  void touch_row(uint32_t index, uint32_t floats) const;
  /// One push of a key that has a row: touch count, Adam's step, the optimizer; false (and the
  /// row as it was) when the result would leave the bounds. `saved`: room for the row's copy.
  bool update_row(uint32_t index, const float* grad, float lr_scale, std::vector<float>& saved);
  /// What apply()'s first pass over some of a push's keys leaves for the second.
  struct found_pass {
    std::vector<std::size_t> missing;  ///< positions of keys without a row (or stale rows)
    std::size_t refused = 0, stale_rows = 0;
  };
  /// apply()'s first pass over keys[begin, end): each row found updated (or evicted and started
  /// over), each key without one noted in `pass`; `saved` is update_row's. Touches no other
  /// state when the table neither evicts nor copies ahead, so parts of a push may run at once.
  void update_found(const uint64_t* keys, std::size_t begin, std::size_t end,
                    const float* grads, float lr_scale, found_pass& pass,
                    std::vector<float>& saved);
  /// read() of keys[0, n) on this thread, `at` its clock.
  void read_range(const uint64_t* keys, std::size_t n, float* out, uint32_t at) const;
  /// One push of a key (of row_index::hash h) that had no row at lookup: admission, creation,
  /// then update_row; false when update_row refused.
  bool push_missing(uint64_t key, uint64_t h, const float* grad, float lr_scale);
  /// Makes room for row `index` (a new page when the last one is full).
  void ensure_page_for(uint32_t index);
  /// Makes room for every row up to `index`.
  void ensure_pages_to(uint32_t index);
  /// Writes `key` and its initial values and state into row `index` (whose page exists).
  void create_row(uint64_t key, uint32_t index);
  /// The age (in clocks) beyond which max_rows evicts, from the ages of the pass just done.
  void plan_row_bound(uint32_t now);

  sparse_table_config cfg_;
  uint64_t seed_;
  uint32_t table_;
  uint32_t slots_;          ///< row_state_slots(cfg_.optimizer.kind)
  bool counts_steps_;       ///< row_counts_steps(cfg_.optimizer.kind): steps_ holds a step per row
  uint32_t stride_;         ///< floats per row: the metadata, then dim × (1 + slots)
  uint32_t rows_per_page_;  ///< a power of two: pages are at most 64 KiB
  uint32_t page_shift_;     ///< log2(rows_per_page_)
  uint32_t page_mask_;      ///< rows_per_page_ − 1
  row_index index_;
  std::vector<std::unique_ptr<float[]>> pages_;
  std::vector<uint32_t> steps_;                     ///< counts_steps_ only, by row index
  absl::flat_hash_map<uint64_t, pending_ref> pending_; ///< exact admission: key → its count
  std::vector<uint64_t> pending_keys_;              ///< pending_clocked(): each entry's key
  std::vector<uint32_t> pending_clocks_;            ///< and the clock of its last push
  std::unique_ptr<admission_sketch> sketch_;        ///< admission_memory > 0: the counts
  float max_parameter_ = default_max_parameter;
  std::vector<float> saved_row_;                    ///< stride_ floats: a row before its update
  uint32_t clock_ = 0;                              ///< of the push being applied
  std::size_t peak_rows_ = 0;
  uint64_t evicted_ = 0;
  uint32_t sweep_at_ = 0;                           ///< the row the sweep's pass goes on at
  uint32_t pending_sweep_at_ = 0;                   ///< then the pending entry
  /// max_rows: ages seen in the current pass (by clocks, capped; the last counts older ones)
  /// and the age beyond which the current pass evicts (none: UINT32_MAX).
  std::vector<uint64_t> ages_;
  uint32_t evict_age_ = UINT32_MAX;
  /// track_removed: each key removed, with the clock of its removal, oldest first.
  bool track_removed_ = false;
  std::vector<std::pair<uint64_t, uint32_t>> removed_;
  /// track_removed: each exact pending entry the sweep dropped, with the clock of the drop.
  std::vector<std::pair<uint64_t, uint32_t>> removed_pending_;
  /// A copy ahead (begin_copy): per row a bit set once pick_copy copied it and one set once it
  /// changed after (both moved with the row by unlink_row; rows beyond them clear), and the
  /// copied keys removed since.
  bool copying_ = false;
  int64_t copy_since_ = 0;
  mutable std::vector<uint64_t> copied_;
  std::vector<uint64_t> changed_;
  absl::flat_hash_set<uint64_t> copied_gone_;
  static bool bit(const std::vector<uint64_t>& bits, uint32_t index) {
    return index / 64 < bits.size() && (bits[index / 64] >> (index % 64) & 1u);
  }
  static void set_bit(std::vector<uint64_t>& bits, uint32_t index, bool on);
  bool copied(uint32_t index) const { return bit(copied_, index); }
  /// pick_parts, with `changed_only` leaving out the rows whose copy ahead is still right.
  std::vector<picked_rows> pick(key_part part, const void* context, std::size_t parts,
                                int64_t now, bool changed_only) const;
  /// A row about to change: its copy (if any) will need writing over.
  void note_change(uint32_t index) {
    if (copying_ && copied(index)) set_bit(changed_, index, true);
  }
};

} // namespace actorps
