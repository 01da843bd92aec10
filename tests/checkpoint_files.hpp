// The shard files of a checkpoint as the shards write them, for tests that build a checkpoint by
// hand (then commit it with commit_checkpoint, or leave it unfinished).
#pragma once

#include "actors/model/mlp_plugin.hpp"
#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/optimizer.hpp"

#include <cstdint>
#include <filesystem>
#include <vector>

namespace actorps::test {

/// A small run for checkpoints built by hand: an MLP 6-5-3 in blocks of 8 floats, 2 shards,
/// 2 workers, 1000 clocks.
inline train_spec small_checkpoint_spec() {
  train_spec spec;
  spec.model = mlp_model({6, 5, 3});
  spec.block_floats = 8;
  spec.shards = 2;
  spec.workers = 2;
  spec.total_clocks = 1000;
  return spec;
}

/// Writes every shard's file of `spec` at `clock` into `dir`: each parameter `value`, each slot
/// of optimizer state `state`; returns their records, in shard order.
inline std::vector<file_record> write_shard_files(const std::filesystem::path& dir,
                                                  const train_spec& spec, int64_t clock,
                                                  float value, float state) {
  block_layout layout(spec);
  auto slots = optimizer_state_slots(spec.optimizer.kind);
  std::vector<file_record> files;
  for (int32_t s = 0; s < spec.shards; ++s) {
    std::vector<float> params(layout.shard_floats(s), value), states(slots * params.size(), state);
    auto buf = encode_shard_checkpoint(spec, s, clock, uint64_t(clock), clock - 1, layout,
                                       params.data(), states.data(), slots);
    files.push_back(write_file_durably(dir / shard_file_name(s), buf.bytes(), buf.size_bytes()));
  }
  return files;
}

} // namespace actorps::test
