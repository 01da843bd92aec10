// What the checkpoint messages carry (the shard's and the chief's disk actor answer with these);
// the files themselves are actors/storage's.
#pragma once

#include "actors/protocol/wire.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// A file of a checkpoint as the manifest lists it.
struct file_record {
  std::string name;   ///< relative to the checkpoint directory
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_record& x) {
  return f(caf::meta::type_name("file_record"), x.name, x.bytes, x.crc32);
}

/// A checkpoint that passed every check, decoded.
struct loaded_checkpoint {
  std::string dir;
  int64_t clock = 0;
  std::vector<wire_buffer> shards;     ///< ShardCheckpoint per shard, in shard order
  wire_buffer run_bytes;               ///< RunCheckpoint
  std::vector<std::string> skipped;    ///< newer checkpoints that failed: "ckpt-…: why"
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, loaded_checkpoint& x) {
  return f(caf::meta::type_name("loaded_checkpoint"), x.dir, x.clock, x.shards, x.run_bytes,
           x.skipped);
}

} // namespace actorps
