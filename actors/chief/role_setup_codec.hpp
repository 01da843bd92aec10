// What the chief tells a worker or evaluator process it starts (schema RoleSetup): encoded by
// its placement (placement.cpp), decoded by the process's task node (deploy/task_node.cpp).
// Implemented in role_setup_codec.cpp.
#pragma once

#include "actors/protocol/data_plan.hpp"
#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/wire_buffer.hpp"
#include "actors/ps/data_source.hpp"
#include "kernels/backend_factory.hpp"

#include <caf/expected.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// What the chief tells a worker or evaluator process (distributed runs; schema RoleSetup).
struct role_setup {
  train_spec spec;
  int32_t index = 0;
  int batch = 64;
  int64_t steps = 0;
  int slow_ms = 0;
  std::chrono::milliseconds request_timeout{std::chrono::minutes(2)};
  data_source data;
  std::vector<std::string> shard_addresses;  ///< host:port per shard
  backend_kind backend = backend_kind::cpu;
  int device = 0;
  int64_t start_clock = 0;
  uint32_t incarnation = 0;
  int64_t data_offset = 0;  ///< worker_config::data_offset
  int64_t follow_until = -1;  ///< worker_config::follow_until (a followed stream's grant)
  int64_t pause_at = -1;  ///< worker_config::pause_at (a change of size asked at that clock)
  data_plan plan;  ///< worker_config::plan (the number of workers changed; steps: its count)
};

wire_buffer encode_role_setup(const role_setup& setup);
caf::expected<role_setup> decode_role_setup(const wire_buffer& buf);

} // namespace actorps
