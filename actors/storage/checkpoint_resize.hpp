// A checkpoint's shard states cut again for another number of shards (a stop-the-world resize:
// `--resume --ps N` from a checkpoint of any shard count).
//
// Each new shard gets, from whichever old shards held them:
// - the dense blocks the new layout gives it (block_layout(spec): spec.block_shards, or when
//   empty the largest-first rule of the shard count), with their optimizer slots; the old
//   shards' blocks are found by id, under whichever placement they were written;
// - the sparse rows of the buckets spec.bucket_shards gives it (rows, optimizer state, touches,
//   Adam steps, row clocks) and the exact pending admission counts of keys in those buckets;
// - a table's admission sketch (--admission-memory), which cannot be split by key: the counters'
//   element-wise maximum over the old shards that held any of its buckets (every key's estimate
//   stays at or above its true count, as a count-min sketch promises; colliding keys may be
//   admitted a little earlier), with the decay cursor of the old shard that held most of them;
// - the old shards' clock; the newest update's clock and the optimizer's step count (Adam's
//   bias correction) are the largest of the old shards' (in sync mode they are all equal).
// The result is what a run of spec.shards shards would have written, byte for byte in the
// parameters and rows, so that sync training goes on with the same math.
#pragma once

#include "actors/protocol/checkpoint_codec.hpp"
#include "actors/protocol/model_spec.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace actorps {

/// The whole shard states `saved` (one file per old shard, in shard order: a checkpoint's, or a
/// chain folded by load_chain) cut for `spec` (this run's: its shards and bucket placement), one
/// file per new shard, under `spec`. The model, its block cut and its tables must be the
/// saved one's (incompatibility says so). Throws std::invalid_argument naming what does not fit.
std::vector<wire_buffer> resize_shard_files(const std::vector<wire_buffer>& saved,
                                            const train_spec& spec);

/// resize_shard_files in two steps: the constructor reads the old files once and sorts every
/// row and pending key out to the new shard that owns it (one pass over the keys); cut_for(s)
/// writes new shard s's file. cut_for only reads, so the new shards' files may be cut at once,
/// each by an actor of its own (a live resize, resize_episode.cpp).
class shard_cut {
public:
  /// Where one row (or pending key) of a new shard's table comes from.
  struct row_source {
    uint64_t key;
    uint32_t shard;  ///< old shard
    uint32_t index;  ///< in that shard's arrays
  };

  /// Throws std::invalid_argument naming what does not fit (as resize_shard_files).
  shard_cut(std::vector<wire_buffer> saved, const train_spec& spec);
  /// How the old shards' dense blocks come: every block in some file (a checkpoint's), or, in a
  /// live resize's hand-overs, only those that leave their shard (a block no file holds stays
  /// where it is, which the new layout must agree with).
  enum class dense_files { whole, leaving_only };
  /// The same with every file decoded already (decoded[o]: decode_shard_checkpoint of saved[o]),
  /// so that a caller may decode the files at once, each on a core of its own.
  shard_cut(std::vector<wire_buffer> saved, std::vector<shard_checkpoint_view> decoded,
            const train_spec& spec, dense_files dense = dense_files::whole);
  ~shard_cut();
  shard_cut(const shard_cut&) = delete;
  shard_cut& operator=(const shard_cut&) = delete;

  /// New shard s's file; throws std::invalid_argument (a key held by two old shards, say, or
  /// a block kept in place, which no file holds).
  wire_buffer cut_for(int s) const;
  /// New shard s's part of a live resize: cut_for(s) with, of the dense blocks, only those an
  /// old shard other than s held (an old shard keeps its own where they are; check_shard_checkpoint
  /// with `held` checks such a part).
  wire_buffer part_for(int s) const;
  /// The bytes that change shard: each moving dense block's values and optimizer slots, and
  /// each row of a moving bucket (key, values, optimizer state, touches, Adam step, clock) or
  /// pending key (key and count).
  uint64_t moving_bytes() const { return moving_; }

private:
  void take(std::vector<shard_checkpoint_view> decoded, dense_files dense);
  wire_buffer cut(int s, bool gains_only) const;
  void sort_rows();
  sparse_table_rows cut_table(std::size_t t, int s) const;

  std::vector<wire_buffer> saved_;            // the old files: the views point into them
  train_spec spec_;
  std::vector<shard_checkpoint_view> old_;
  std::unique_ptr<block_layout> after_;
  std::vector<block_view> values_, state_;    // every block's, by id
  std::vector<int32_t> held_by_;              // the old shard of each block, by id
  std::vector<bool> in_place_;                // by id: no file holds it, its shard keeps it
  uint64_t step_ = 0;
  int64_t newest_ = -1;
  uint64_t moving_ = 0;
  // per table, per new shard: its rows and pending keys, and where each old shard's run of
  // them begins (in that shard's file order; the runs end with the total)
  std::vector<std::vector<std::vector<row_source>>> rows_, pending_;
  std::vector<std::vector<std::vector<std::size_t>>> row_runs_, pending_runs_;
};

/// The bucket placement a run of `shards` shards resumed from a checkpoint written under
/// `saved` uses: the checkpoint's own at its shard count, else buckets_after_resize of it
/// (placement_change.hpp); empty for a model without sparse tables.
std::vector<uint16_t> resumed_placement(const train_spec& saved, int shards);

/// Whether a checkpoint written under `saved` (its run.capnp's spec) must be cut again to restore
/// under `spec`: another shard count, bucket placement or dense placement.
bool needs_resize(const train_spec& saved, const train_spec& spec);

} // namespace actorps
