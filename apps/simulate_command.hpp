// `actorps simulate`: parses its flags, loads the data and runs the single-process cluster.
#pragma once

#include <string>
#include <vector>

namespace actorps {

/// Runs the command with the arguments after "simulate"; returns the process exit status
/// (0 success, 1 the run failed, 2 bad usage or bad input).
int simulate_command(const std::vector<std::string>& args);

/// The help text of `actorps simulate` (every flag with its default).
std::string simulate_help();

} // namespace actorps
