// `actorps evaluate`: an exported model on a test split — accuracy, loss, confusion matrix.
#pragma once

#include <string>
#include <vector>

namespace actorps {

/// Runs the command with the arguments after "evaluate"; returns the process exit status
/// (0 success, 2 bad usage or bad input: a missing or damaged model, unusable data).
int evaluate_command(const std::vector<std::string>& args);

} // namespace actorps
