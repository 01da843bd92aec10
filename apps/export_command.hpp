// `actorps export`: a saved checkpoint exported as a versioned model directory, the same
// DIR/<version>/ that `--export-dir` writes at the end of a run (export/model_export.hpp).
#pragma once

#include <string>
#include <vector>

namespace actorps {

/// Runs the command with the arguments after "export"; returns the process exit status
/// (0 exported, 2 bad usage or bad input: no valid checkpoint, an export directory that cannot
/// be written, a test split that does not fit the model).
int export_command(const std::vector<std::string>& args);

} // namespace actorps
