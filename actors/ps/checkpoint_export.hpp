// A saved checkpoint exported as a model directory, and a chain of export versions folded into
// one full version: what `actorps export --checkpoint` and `--consolidate` do, saying on stdout
// what they wrote (the directory's format: actors/serving/EXPORT_FORMAT.md).
#pragma once

#include "actors/ps/test_split.hpp"

#include <string>

namespace actorps {

/// What to export, as `actorps export`'s flags of the same names.
struct checkpoint_export_options {
  std::string checkpoint;      ///< a ckpt-* directory, or a directory holding them (newest valid)
  std::string checkpoint_key;  ///< the key file the run signed with ("" unsigned)
  std::string export_dir;      ///< written as export_dir/<version>/
  test_split_flags data;       ///< the test split the export is scored on
};

/// Exports the newest valid checkpoint at options.checkpoint (each newer invalid one said on
/// stderr) to export_dir/<version>/, scored on the test split of `data`, as a run's
/// --export-dir writes it at its end. Throws std::invalid_argument naming the flag of what is
/// wrong (the checkpoint, its key, the test split, the directory).
void export_checkpoint(const checkpoint_export_options& options);

/// Folds the newest complete chain at `chain` (an export directory, or the version DIR/<v> it
/// ends at) into one new full version of `export_dir` ("": the chain's own export directory).
/// Throws std::invalid_argument naming --consolidate or --export-dir.
void consolidate_export_dir(const std::string& chain, const std::string& export_dir);

} // namespace actorps
