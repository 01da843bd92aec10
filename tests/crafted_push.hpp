// Pushes built by hand with Cap'n Proto, for payloads no honest worker would send: blocks of
// any bytes, under any precision value (an unknown one too).
#pragma once

#include "actors/protocol/wire.hpp"
#include "schema/actorps.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>
#include <utility>
#include <vector>

namespace actorps::test {

/// A push of the blocks (id, values' bytes as they go on the wire) under precision `precision`
/// (schema WirePrecision's raw value: 0 fp32, 1 bf16).
inline wire_buffer craft_push_bytes(
  int32_t worker, int64_t clock, int32_t shard,
  const std::vector<std::pair<uint32_t, std::vector<uint8_t>>>& blocks, uint16_t precision = 0) {
  capnp::MallocMessageBuilder mb;
  auto push = mb.initRoot<wire::Push>();
  push.setWorker(worker);
  push.setClock(clock);
  push.setShard(shard);
  push.setPrecision(static_cast<wire::WirePrecision>(precision));
  auto list = push.initBlocks(static_cast<unsigned>(blocks.size()));
  for (unsigned i = 0; i < blocks.size(); ++i) {
    list[i].setId(blocks[i].first);
    auto data = list[i].initValues(static_cast<unsigned>(blocks[i].second.size()));
    if (!blocks[i].second.empty()) std::memcpy(data.begin(), blocks[i].second.data(), data.size());
  }
  auto flat = capnp::messageToFlatArray(mb);
  return wire_buffer::from_bytes(flat.begin(), flat.size() * sizeof(capnp::word));
}

/// A float32 push of the blocks (id, values).
inline wire_buffer craft_push(int32_t worker, int64_t clock, int32_t shard,
                              const std::vector<std::pair<uint32_t, std::vector<float>>>& blocks) {
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> bytes;
  for (const auto& [id, values] : blocks) {
    std::vector<uint8_t> raw(values.size() * sizeof(float));
    if (!raw.empty()) std::memcpy(raw.data(), values.data(), raw.size());
    bytes.push_back({id, std::move(raw)});
  }
  return craft_push_bytes(worker, clock, shard, bytes);
}

} // namespace actorps::test
