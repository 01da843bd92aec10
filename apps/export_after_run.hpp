// `--export-dir DIR` of `actorps simulate` and `actorps chief`: the directory is checked before
// the run, and the final parameters are exported after it succeeded (export/model_export.hpp);
// with --export-every, versions are written while it trains too (export_versions.hpp).
#pragma once

#include "actors/protocol/messages.hpp"
#include "apps/training_flags.hpp"
#include "apps/export/model_export.hpp"

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

/// The request of `plan` (run by `actorps <source>`). When it exports, proves now that the
/// model can be exported (an MLP, lr or dlrm) and the directory written (creating it if
/// missing), throwing usage_error naming what is wrong, and asks the chief for every sparse
/// row with the final snapshots (chief_config::final_rows) and, with plan.export_every, for
/// export versions while training (export_versions.hpp).
export_request plan_export(training_plan& plan, const std::string& source);

/// The dense parameters (flat, model order) and every sparse row of one ShardCheckpoint per
/// shard (a checkpoint's files, from `origin`, or the states an export version is made of):
/// each shard's blocks checked against the layout and copied to their offsets (every parameter
/// must end up covered and finite), each table's rows merged over the shards. Throws
/// std::invalid_argument naming `origin` and the shard file.
trained_parameters shard_state_parameters(const std::vector<wire_buffer>& shards,
                                          const train_spec& spec, const std::string& origin);

/// What metadata.json calls the data: "fashion-mnist", "synthetic", "csv", "libsvm", "criteo".
std::string export_dataset_name(const data_source& data);

/// Prints where an export went and what its parameters score ("  exported to DIR/<v> ...").
void print_export(const export_result& done);

/// After a successful run: assembles the final parameters (and a CTR model's sparse rows) from
/// the summary's shard snapshots and exports them, evaluated on `test` (loaded from the plan's
/// data when null); prints where.
/// Returns the exit status: 0, or 1 after printing why the export failed.
int export_run(const export_request& request, const run_summary& summary,
               std::shared_ptr<const dataset> test);

} // namespace actorps
