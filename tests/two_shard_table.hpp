// A sync spec of one worker over two shards with one sparse table (rows of 2 floats, SGD with
// rate 1), and the keys a shard owns in it: what the tests that drive shard 0 of it by hand
// (delta snapshots, delta exports) share.
#pragma once

#include "tests/shard_fixture.hpp"

#include <cstdint>
#include <vector>

namespace actorps::test {

inline train_spec two_shard_table_spec() {
  auto spec = tiny_spec(consistency::sync, 1);
  spec.shards = 2;
  sparse_table_spec table;
  table.name = "emb";
  table.config.dim = 2;
  table.config.optimizer.kind = row_optimizer_kind::sgd;
  table.config.optimizer.learning_rate = 1.0f;
  spec.model.sparse_tables.push_back(table);
  place_buckets(spec);
  return spec;
}

/// The first `n` keys from `from` up that shard `shard` owns.
inline std::vector<uint64_t> keys_of(const train_spec& spec, int shard, std::size_t n,
                                     uint64_t from) {
  std::vector<uint64_t> keys;
  for (uint64_t k = from; keys.size() < n; ++k)
    if (spec.shard_of_key(k) == shard) keys.push_back(k);
  return keys;
}

} // namespace actorps::test
