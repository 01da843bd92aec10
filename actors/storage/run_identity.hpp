// What makes a run the same run: its model (tensors, blocks, sparse tables and their settings),
// dataset and its size, seed, shards, workers, batch and optimizer. Every checkpoint records it
// (the spec and run.capnp's dataset fields); a run may continue only a checkpoint with the same
// identity. Its length is not part of it: `--resume --epochs N` with a larger N extends a run.
// Learning rates, the schedule and the consistency mode may change on resume too.
#pragma once

#include "actors/protocol/wire.hpp"

#include <string>

namespace actorps {

struct run_identity {
  train_spec spec;          ///< model, block cut, shards, workers, optimizer, seed, tables
  int batch = 0;
  std::string dataset;      ///< "synthetic", "csv:/absolute/path", ... (see dataset_identity)
  int64_t train_rows = 0;
  std::vector<stream_file> files;  ///< a streamed training directory's files (else empty)
};

/// A training directory (files recorded on both sides) may have gained files after the file
/// the furthest worker reached, if no worker passed its first pass over them: the run goes on
/// into them. Any other change of rows is a different dataset.
///
/// How checkpoint `saved` differs from the run `current` ("" when it is the same run), the
/// first difference found, naming both values: "the checkpoint's seed is 1, this run's 2".
std::string identity_difference(const run_checkpoint& saved, const run_identity& current);

} // namespace actorps
