// `actorps gen-data libsvm`: a seeded sparse binary problem with a planted logistic model,
// written as train and test libsvm files (gen_data/planted_libsvm.hpp).
#pragma once

#include <string>
#include <vector>

namespace actorps {

/// Runs the command with the arguments after "gen-data"; returns the process exit status
/// (0 written, 2 bad usage: an unknown format, a flag out of range, a directory that cannot
/// be written).
int gen_data_command(const std::vector<std::string>& args);

} // namespace actorps
