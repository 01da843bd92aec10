// `actorps predict`: classifies images with an exported model, one JSON line per image.
#pragma once

#include <string>
#include <vector>

namespace actorps {

/// Runs the command with the arguments after "predict"; returns the process exit status
/// (0 success, 2 bad usage or bad input: a missing or damaged model, an unusable input file).
int predict_command(const std::vector<std::string>& args);

} // namespace actorps
