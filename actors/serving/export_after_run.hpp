// The export of a run (`--export-dir DIR` of `actorps simulate` and `actorps chief`, train()'s
// export_dir): the directory is checked before the run, and the final parameters are exported
// after it succeeded (model_export.hpp); with an export every N clocks, versions are written
// while it trains too (export_versions.hpp).
#pragma once

#include "actors/chief/chief.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/serving/model_export.hpp"

#include <memory>
#include <string>

namespace actorps {

/// What the export needs, taken from the plan before the run consumes it.
struct export_request {
  std::string dir;     ///< empty: the run exports nothing
  std::string source;  ///< the command: "simulate" or "chief"
  train_spec spec;
  data_source data;
  int batch = 0;
};

/// Proves now that `request` can export (an MLP, a CTR model, or tensors and rows) and that its
/// directory can be written (creating it if missing), and sets `chief` up for it: every sparse
/// row with the final snapshots (chief_config::final_rows) and, with `every` > 0, a version every
/// `every` global clocks while training, every `full_every`-th one full (export_versions.hpp).
/// Throws std::invalid_argument naming `option`, the setting that names the directory.
void prepare_export(const export_request& request, int64_t every, int full_every,
                    chief_config& chief, const std::string& option);

/// The dense parameters (flat, model order) and every sparse row of one ShardCheckpoint per
/// shard (a checkpoint's files, from `origin`, or the states an export version is made of):
/// each shard's blocks checked against the layout and copied to their offsets (every parameter
/// must end up covered and finite), each table's rows merged over the shards. Throws
/// std::invalid_argument naming `origin` and the shard file.
trained_parameters shard_state_parameters(const std::vector<wire_buffer>& shards,
                                          const train_spec& spec, const std::string& origin);

/// The shards' states for an export version: whole, or every one a delta since the same clock.
struct shard_states {
  trained_parameters params;  ///< the dense parameters, and the sparse rows the states hold
  std::vector<std::vector<uint64_t>> removed;  ///< per table: the deltas' tombstones, ascending
  int64_t since = -1;         ///< the clock the deltas count from; -1: the states are whole
  uint64_t rows = 0;          ///< sparse rows over every table and shard
};

/// shard_state_parameters of states that may be deltas (ShardCheckpoint's deltaSince). Throws
/// as it does, and when some states are deltas and others whole, or deltas since other clocks.
shard_states shard_state_changes(const std::vector<wire_buffer>& shards, const train_spec& spec,
                                 const std::string& origin);

/// What metadata.json calls the data: "fashion-mnist", "synthetic", "csv", "libsvm", "criteo".
std::string export_dataset_name(const data_source& data);

/// Prints where an export went and what its parameters score ("  exported to DIR/<v> ...").
void print_export(const export_result& done);

/// After a successful run: assembles the final parameters (and a CTR model's sparse rows) from
/// the summary's shard snapshots and exports them, evaluated on `test` (loaded from the
/// request's data when null). Throws std::exception saying why it could not.
export_result export_final(const export_request& request, const run_summary& summary,
                           std::shared_ptr<const dataset> test);

/// export_final, then prints where the export went (print_export).
/// Returns the exit status: 0, or 1 after printing why the export failed.
int export_run(const export_request& request, const run_summary& summary,
               std::shared_ptr<const dataset> test);

} // namespace actorps
