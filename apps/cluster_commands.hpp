// `actorps chief|ps|worker|evaluator`: one task of a distributed run per process. The cluster
// comes from --cluster FILE plus --task TYPE:INDEX, or from the TF_CONFIG environment variable.
#pragma once

#include <string>
#include <vector>

namespace actorps {

/// Runs the task `type` ("chief", "ps", "worker" or "evaluator") with the arguments after it;
/// returns the exit status (0 success, 1 the run or the chief failed, 2 bad usage or input).
int cluster_command(const std::string& type, const std::vector<std::string>& args);

} // namespace actorps
