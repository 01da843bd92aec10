// A checkpoint's two kinds of file on the wire's terms: a shard's state (schema ShardCheckpoint,
// whole or a delta) and the run's part (schema RunCheckpoint, with the data positions).
// Implemented in checkpoint_codec.cpp; the files around them are actors/storage's.
#pragma once

#include "actors/protocol/data_plan.hpp"

#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/push_codec.hpp"
#include "actors/protocol/wire_buffer.hpp"
#include "kernels/sparse/sparse_table.hpp"

#include <caf/expected.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// A shard's state at a checkpoint (schema ShardCheckpoint).
struct shard_checkpoint_view {
  train_spec spec;
  int32_t shard = 0;
  int64_t clock = 0;
  uint64_t optimizer_step = 0;     ///< updates applied to the optimizer state (Adam's step)
  int64_t newest_clock = -1;
  std::vector<block_view> blocks;  ///< parameters
  std::vector<block_view> state;   ///< optimizer state: slots × block size floats per block
  std::vector<sparse_table_rows> sparse;  ///< every sparse table's rows, in spec order (copied)
  /// -1: the whole state; C: a delta checkpoint's, its tables holding only the rows pushed at
  /// clock C or later, with tombstones (sparse_table::delta_of)
  int64_t delta_since = -1;
};

/// Where a worker is in its data (schema DataPosition).
struct data_position {
  int32_t worker = 0;
  int64_t clock = 0;          ///< next clock to compute
  int64_t epoch = 0;
  int64_t batch_in_epoch = 0;
  int32_t file = -1;          ///< a training directory's file its next batch starts in (-1: none)
  int64_t file_row = 0;       ///< the worker's rows of that file read before that batch
};

/// One file of a training directory read as a stream (schema StreamFile).
struct stream_file {
  std::string name;           ///< in the directory
  uint64_t bytes = 0;
  std::vector<int64_t> rows;  ///< the rows each worker reads of it
};

/// The run's part of a checkpoint (schema RunCheckpoint).
struct run_checkpoint {
  train_spec spec;
  int64_t clock = 0;
  int batch = 0;
  int64_t steps = 0;
  int64_t samples = 0;
  double wall_s = 0;
  std::vector<data_position> positions;
  std::string run_id;       ///< the lineage: made by a fresh start, kept by every resume
  std::string dataset;      ///< what the run trains on ("" in checkpoints of older versions)
  int64_t train_rows = 0;   ///< rows of that training set
  std::vector<stream_file> files;  ///< a training directory's files in name order (else empty)
  /// Once the number of workers has changed: each worker's minibatches not trained by `clock`
  /// (one per worker of spec.workers); empty: each worker has its own part (`positions`).
  std::vector<data_plan> plans;
};

/// Shard `shard`'s parameters and optimizer state (`slots` floats per parameter, laid out per
/// block as the shard keeps them: slots × size floats at slots × shard_offset, and the
/// optimizer's step count).
wire_buffer encode_shard_checkpoint(const train_spec& spec, int32_t shard, int64_t clock,
                                    uint64_t optimizer_step, int64_t newest_clock,
                                    const block_layout& layout, const float* shard_buffer,
                                    const float* state, std::size_t slots,
                                    const std::vector<sparse_table_rows>& sparse = {},
                                    int64_t delta_since = -1);

/// The same checkpoint under another spec (a resumed run's: its rate, mode or length may differ
/// from the saved run's; its model and layout may not — the caller checks compatibility).
wire_buffer encode_shard_checkpoint(const train_spec& spec, const shard_checkpoint_view& saved);

wire_buffer encode_run_checkpoint(const run_checkpoint& run);

/// A ShardCheckpoint's deltaSince (-1: whole, or not a ShardCheckpoint), read without decoding
/// the rest.
int64_t shard_checkpoint_delta_since(const wire_buffer& buf);

/// A live resize's rows for one shard (a hand-over's [1 + s]: a ShardCheckpoint without dense
/// blocks, sketches or tombstones) read in place: the arrays point into the buffer read, which
/// must outlive the view. Their sizes are checked by sparse_table::take_rows.
struct shard_rows_view {
  train_spec spec;     ///< the run's before the resize (its placement)
  int32_t shard = 0;   ///< the old shard that handed them over
  int64_t clock = 0;
  std::vector<sparse_rows_in> tables;  ///< in spec order
  /// -1: the rows whole; C: what changed since the copy ahead begun at clock C (the rows
  /// pushed since or never copied, to write over the copies), and `gone` per table: the keys
  /// copied that are no rows any more (sparse_table::pick_after_copy).
  int64_t delta_since = -1;
  std::vector<array_in<uint64_t>> gone;
};

caf::expected<shard_rows_view> read_shard_rows(const wire_buffer& buf);

/// Old shard `shard`'s rows for one new shard at `clock` under `spec` (the run's before the
/// resize): of each table of `tables`, the rows and pending counts `picked` holds
/// (sparse_table::pick_parts, the tables unchanged since), copied from the table straight into
/// the message (read_shard_rows reads it); with `delta_since` >= 0 a delta after a copy ahead
/// begun then (pick_after_copy: its `gone` keys as tombstones).
wire_buffer encode_shard_rows(const train_spec& spec, int32_t shard, int64_t clock,
                              const std::vector<const sparse_table*>& tables,
                              const std::vector<sparse_table::picked_rows>& picked,
                              int64_t delta_since = -1);

/// The bytes of a ShardCheckpoint's sparse rows and pending counts (keys, values, optimizer
/// state, touches, steps, clocks; pending keys and counts), read in place; 0 when unreadable.
uint64_t shard_checkpoint_row_bytes(const wire_buffer& buf);

caf::expected<shard_checkpoint_view> decode_shard_checkpoint(const wire_buffer& buf);
caf::expected<run_checkpoint> decode_run_checkpoint(const wire_buffer& buf);

} // namespace actorps
