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
  /// A shard file's: -1 its whole state, C the changes since clock C (a delta checkpoint's).
  int64_t delta_since = -1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_record& x) {
  return f(caf::meta::type_name("file_record"), x.name, x.bytes, x.crc32, x.delta_since);
}

/// Where a delta checkpoint sits in its chain: the full checkpoint it builds on (its base) and
/// the one just before it (its predecessor), each by clock and its manifest's SHA-256.
struct checkpoint_link {
  int64_t base_clock = -1;  ///< -1: no chain to continue (the checkpoint is written whole)
  std::string base_sha256;
  int64_t predecessor_clock = -1;
  std::string predecessor_sha256;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_link& x) {
  return f(caf::meta::type_name("checkpoint_link"), x.base_clock, x.base_sha256,
           x.predecessor_clock, x.predecessor_sha256);
}

/// A checkpoint that passed every check, decoded.
struct loaded_checkpoint {
  std::string dir;
  int64_t clock = 0;
  std::vector<wire_buffer> shards;     ///< ShardCheckpoint per shard, in shard order
  wire_buffer run_bytes;               ///< RunCheckpoint
  std::vector<std::string> skipped;    ///< newer checkpoints that failed: "ckpt-…: why"
  std::string manifest_sha256;         ///< of its MANIFEST.json, as a delta names it
  checkpoint_link link;                ///< a delta's base and predecessor (base_clock -1: full)
  /// The directories read, base first, when it was restored from a chain (else empty): the
  /// shard files are then the chain folded into whole states.
  std::vector<std::string> chain;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, loaded_checkpoint& x) {
  return f(caf::meta::type_name("loaded_checkpoint"), x.dir, x.clock, x.shards, x.run_bytes,
           x.skipped, x.manifest_sha256, x.link, x.chain);
}

} // namespace actorps
