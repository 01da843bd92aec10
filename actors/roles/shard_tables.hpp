// The sparse tables of one parameter shard: the rows of the keys whose buckets the spec places
// on it (kernels/sparse/sparse_table.hpp), and what the shard actor does with them — check a
// message's rows, apply a push at once (ssp, async) or keep it for the clock's mean (sync),
// read rows into a reply, and move all of it in and out of a checkpoint.
//
// Sync: each worker's push for the clock is kept as it arrived (the message buffer, rows read in
// place, never copied); the mean is summed per key in worker order, so neither arrival order nor
// the order of keys in a push changes a single bit of the result. A key that a worker did not
// push counts as a zero gradient from it: the mean is over every pusher, as for dense blocks.
//
// Rates: a table's optimizer carries its own learning rate (the spec's table config); sync
// applies the mean with it, ssp and async apply each push with it / live workers, as dense
// blocks do. The run's learning-rate schedule is for dense tensors and does not touch tables.
#pragma once

#include "actors/protocol/checkpoint_codec.hpp"
#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/wire.hpp"
#include "kernels/sparse/parallel_parts.hpp"
#include "kernels/sparse/sparse_table.hpp"

#include <caf/error.hpp>

#include <cstdint>
#include <vector>

namespace actorps {

class shard_tables {
public:
  shard_tables() = default;
  /// Empty tables for spec.model.sparse_tables, on shard `shard` (spec's buckets placed), whose
  /// rows keep every value within max_parameter (a refused row update is counted, not applied).
  shard_tables(const train_spec& spec, int32_t shard,
               float max_parameter = default_max_parameter);

  std::size_t size() const { return tables_.size(); }
  /// Floats per row of each table.
  const std::vector<uint32_t>& dims() const { return dims_; }

  /// Checks a message's parts: a known table, each at most once, every key owned by this shard;
  /// with_rows (a push): dim floats per key, each within max_gradient (so finite), and no key
  /// twice; else (keys to read) no values. Returns the error to drop the message with, or none.
  /// `largest`, when given, is raised to the largest |gradient value| of a valid push.
  caf::error validate(const std::vector<sparse_rows_view>& parts, bool with_rows,
                      float max_gradient = default_max_gradient,
                      float* largest = nullptr) const;

  /// The global clock now (the shard's progress clock): reads, exports and sweeps are at it.
  void set_clock(int64_t now) { now_ = now; }
  int64_t clock() const { return now_; }

  /// ssp, async: applies one valid push's rows at once with each table's rate × lr_scale, as
  /// pushed at global clock `clock`; returns the rows whose update was refused (it would have
  /// left the bound). A large push's rows found are updated in parts on the machine's cores
  /// (validate() proved its keys unique).
  std::size_t apply(const std::vector<sparse_rows_view>& parts, float lr_scale, int64_t clock);

  /// sync: keeps `worker`'s valid push for the clock; `push` holds the memory `parts` points to.
  void keep(int32_t worker, wire_buffer push, std::vector<sparse_rows_view> parts);
  /// sync: drops what `worker` pushed for the clock (it left).
  void forget(int32_t worker);
  /// sync: applies, with each table's rate, the kept rows of `pushers` (ascending worker ids)
  /// summed per key in that order, times `scale` (1 / rate_divisor: their mean); then forgets
  /// every kept push. Returns the rows whose update was refused. `clock`: the clock whose mean
  /// it is. Large means are applied in parts as apply() does (their keys are unique).
  std::size_t apply_mean(const std::vector<int32_t>& pushers, float scale, int64_t clock);

  /// Writes the current rows of keys[0, n) of `table` (values a missing key would start with);
  /// a large read in parts on the machine's cores (parallel_parts.hpp).
  void read(uint32_t table, const uint64_t* keys, std::size_t n, float* out) const {
    tables_[table].read(keys, n, out, now_, parts_for(n));
  }

  /// Whether any table evicts rows (sparse_table_config::evict_after, max_rows).
  bool evicting() const;
  /// The smallest evict_after over the tables that set one; 0: none does.
  uint32_t shortest_eviction() const;
  /// One bounded step of every evicting table's sweep at the clock now: at most `budget` rows
  /// looked at in all. Whether each table's pass has reached its end since the last call that
  /// said so (the sweep has gone over every row once).
  bool sweep(std::size_t budget);

  /// Every table's rows and state, for a checkpoint (without rows stale at the clock now).
  std::vector<sparse_table_rows> export_rows() const;
  /// The sparse part of a delta checkpoint: every table of `whole` (an export_rows() taken at
  /// the clock `then`) reduced to what changed since global clock `since`
  /// (sparse_table::delta_of).
  std::vector<sparse_table_rows> delta_of(std::vector<sparse_table_rows> whole, int64_t since,
                                          int64_t then) const;
  /// The same of every table at the clock now without exporting them whole
  /// (sparse_table::changed_rows).
  std::vector<sparse_table_rows> changed_rows(int64_t since) const;
  /// The removals every evicting table remembers for delta checkpoints, from before global
  /// clock `before` on, forgotten (a delta since `before` needs none of them).
  void forget_removed(int64_t before);
  /// Whether evicting tables remember their removals (only ever in a run that writes
  /// checkpoints, or export versions); turning it off forgets what they hold.
  void track_removed(bool on);
  /// Export versions want removals from now on (delta versions' tombstones), as checkpoints
  /// do. Whether they were wanted already (else those before now are unknown).
  bool want_removals();

  // --- a live resize: the buckets that change shard move, the others stay where they are ---

  /// Every table's rows and pending counts of the keys whose bucket `placement` (the new bucket
  /// → shard placement) gives to another shard, at the clock now, picked by that shard: out[s]
  /// holds every table's for new shard s (none for this one), the rows not copied yet
  /// (encode_shard_rows copies them from tables()). Nothing changes here until move_to. After
  /// a copy ahead for this placement and `resize_clock` (copied_since), only what changed since
  /// (sparse_table::pick_after_copy).
  std::vector<std::vector<sparse_table::picked_rows>> pick_moving(
    const std::vector<uint16_t>& placement, int64_t resize_clock = -1) const;
  /// The tables, in spec order, to read (pick_moving's rows).
  std::vector<const sparse_table*> tables() const;
  /// Every table's admission sketch alone (depth 0 where it counts exactly): the part of a
  /// table a move cannot split by key.
  std::vector<sparse_table_rows> admission_states() const;
  /// Goes on under `after` (its bucket placement): drops the rows and pending counts of the keys
  /// it gives to another shard and takes `incoming` (every table's rows of the buckets it gains
  /// and its admission sketch, every sketch that counted keys now here merged) and the rows of
  /// `parts` (each an old shard's hand-over for this one, read in place, without sketches), rows
  /// without clocks at `clock`. The parts' keys must each be their old shard's under the parts'
  /// placement, which must be this shard's now unless it holds nothing. On error (table count,
  /// a key not this shard's to take) nothing changes; a table's contents refused stop the move
  /// part way (the run fails).
  /// `arriving`, when given, holds the rows copied ahead to this shard (stage): they join
  /// first, then each part after a copy (shard_rows_view::delta_since) is taken on top of them
  /// (its gone keys removed, its rows written over the copies).
  caf::error move_to(const train_spec& after, const std::vector<sparse_table_rows>& incoming,
                     const std::vector<shard_rows_view>& parts, int64_t clock,
                     shard_tables* arriving = nullptr);

  // --- copying ahead: the moving rows copied while the run trains, only what changes after
  // handed over at the resize's clock ---

  /// Starts copying ahead the rows of the keys whose bucket `placement` gives another shard, for
  /// the resize at `resize_clock`, at the clock now; an earlier copy is forgotten.
  void begin_copy(const std::vector<uint16_t>& placement, int64_t resize_clock);
  /// Whether a copy ahead for `placement` at `resize_clock` is under way.
  bool copying_for(const std::vector<uint16_t>& placement, int64_t resize_clock) const {
    return copy_clock_ == resize_clock && copy_placement_ == placement;
  }
  /// One bounded step of the copy: at most `budget` rows looked at; out[s] holds every table's
  /// rows newly copied for new shard s, to encode from tables() now. `done` once every row was
  /// looked at.
  std::vector<std::vector<sparse_table::picked_rows>> copy_step(std::size_t budget, bool& done);
  /// The clock the copy for the resize to `placement` at `resize_clock` began at (pick_moving's
  /// rows are its delta then), or -1.
  int64_t copied_since(const std::vector<uint16_t>& placement, int64_t resize_clock) const;
  /// Forgets a copy ahead (the move is made, or will not be).
  void end_copy();
  /// Takes a copy ahead's rows for this shard (keys no copy brought before: not looked up).
  caf::error stage(const shard_rows_view& copy);

  /// Replaces every table's contents with a checkpoint's taken at global clock `clock` (its
  /// rows' last clocks, where it has none); on error (table count, a table's contents, a key
  /// another shard owns) nothing changes.
  caf::error import_rows(const std::vector<sparse_table_rows>& saved, int64_t clock = 0);

  /// Rows of each table, the most each has held, and the bytes all of them hold.
  std::vector<uint64_t> rows() const;
  std::vector<uint64_t> peak_rows() const;
  uint64_t memory_bytes() const;
  /// Rows evicted and keys pending admission, over every table.
  uint64_t evicted() const;
  uint64_t pending() const;
  /// Bytes the pending admission counts hold, over every table (part of memory_bytes).
  uint64_t admission_bytes() const;

private:
  struct kept_push {
    wire_buffer buffer;
    std::vector<sparse_rows_view> parts;
  };

  std::vector<uint16_t> buckets_;  // the spec's bucket → shard placement
  int32_t shard_ = 0;
  uint64_t seed_ = 0;
  float max_parameter_ = default_max_parameter;
  std::vector<sparse_table> tables_;
  std::vector<uint32_t> dims_;
  std::vector<kept_push> kept_;  // sync: per worker
  int64_t now_ = 0;
  std::vector<bool> passed_;     // per table: its sweep finished a pass since sweep() said so
  uint32_t sweep_table_ = 0;     // the table the next sweep() starts with
  bool checkpointing_ = false;   // the run writes checkpoints or exports: removals wanted
  bool track_removed_ = false;   // evicting tables remember removals
  // a copy ahead (begin_copy): its resize's clock (-1: none) and placement, and where it is
  int64_t copy_clock_ = -1;
  std::vector<uint16_t> copy_placement_;
  uint32_t copy_table_ = 0;
  uint32_t copy_row_ = 0;

  bool owns(uint64_t key) const {
    return shard_of_key(buckets_, key) == shard_;
  }
};

} // namespace actorps
