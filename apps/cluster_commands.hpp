// `actorps run|chief|ps|worker|evaluator`: one task of a distributed run per process. The
// cluster comes from --cluster FILE plus --task TYPE:INDEX, or from the TF_CONFIG environment
// variable. `run` is one command for every replica: the task says which role it is.
#pragma once

#include <string>
#include <vector>

namespace actorps {

/// Runs `command` ("run": the role the task names; "chief", "ps", "worker" or "evaluator": that
/// role) with the arguments after it; returns the exit status (exit_codes.hpp).
int cluster_command(const std::string& command, const std::vector<std::string>& args);

} // namespace actorps
