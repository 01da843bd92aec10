// The worker's (and the evaluator's) side of the sparse tables for one minibatch: the keys the
// model names, de-duplicated per table and split by the shard that owns each key; the rows the
// shards send back, put in place; and the summed gradient rows that go back to each shard.
//
//   batch_tables batch(spec);
//   batch.prepare(keys_per_table);            // dedup, split, values sized, grads zeroed
//   send(s, encode_pull(w, c, s, batch.keys_for(s)));
//   batch.take_rows(s, reply.sparse);         // for every shard's reply
//   trainer.step(c, params, grad, batch.rows());
//   send(s, encode_push(..., batch.grads_for(s), next.keys_for(s)));
#pragma once

#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/ps/model_plugin.hpp"

#include <caf/error.hpp>

#include <cstdint>
#include <vector>

namespace actorps {

class batch_tables {
public:
  batch_tables() = default;
  /// Empty rows for each of spec.model.sparse_tables (its buckets placed).
  explicit batch_tables(const train_spec& spec);

  bool empty() const { return rows_.empty(); }  ///< the model has no sparse tables

  /// Takes the keys the model named for each table (repeats welcome): the distinct keys and
  /// the inverse index of rows(), values sized (unread), grads zeroed, and each shard's share.
  void prepare(const std::vector<std::vector<uint64_t>>& keys);

  /// What shard s is asked for: its keys of each table that has any (rows unread).
  std::vector<sparse_rows_ref> keys_for(int shard) const;
  /// What shard s is pushed: its keys of each table that has any, with their gradient rows.
  std::vector<sparse_rows_ref> grads_for(int shard) const;

  /// Puts the rows of shard s's reply in place. An error when they are not the rows asked of it
  /// (another table, another count); rows() is then partly updated.
  caf::error take_rows(int shard, const std::vector<sparse_rows_view>& parts);

  std::vector<table_rows>& rows() { return rows_; }
  const std::vector<table_rows>& rows() const { return rows_; }

private:
  std::vector<sparse_rows_ref> parts_for(int shard, bool with_grads) const;

  std::vector<uint16_t> buckets_;  // the spec's bucket → shard placement
  std::vector<table_rows> rows_;
  /// [shard][table]: the indices into rows_[table].keys of the keys that shard owns, ascending.
  std::vector<std::vector<std::vector<uint32_t>>> owned_;
};

} // namespace actorps
