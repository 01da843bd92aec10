// `actorps scale`: asks the chief of a running distributed job to grow or shrink its shards.
#pragma once

#include <string>
#include <vector>

namespace actorps {

/// Runs the command with the arguments after "scale"; returns the process exit status: 0 the
/// run goes on with that many shards, 2 bad usage or the chief refused (the reason printed),
/// 1 the chief could not be reached or did not answer in time.
int scale_command(const std::vector<std::string>& args);

} // namespace actorps
