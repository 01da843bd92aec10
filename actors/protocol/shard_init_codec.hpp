// A shard's start: the run's spec, its index and its initial parameters (schema ShardInit).
// Implemented in spec_codec.cpp, beside the TrainSpec it carries.
#pragma once

#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/push_codec.hpp"
#include "actors/protocol/wire_buffer.hpp"

#include <caf/expected.hpp>

#include <cstdint>
#include <vector>

namespace actorps {

struct shard_init_view {
  train_spec spec;
  int32_t shard = 0;
  std::vector<block_view> blocks;
};

wire_buffer encode_shard_init(const train_spec& spec, int32_t shard, const block_layout& layout,
                              const float* shard_buffer);

caf::expected<shard_init_view> decode_shard_init(const wire_buffer& buf);

} // namespace actorps
