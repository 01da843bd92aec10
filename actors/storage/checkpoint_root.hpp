// Where a shard may write checkpoint files: only under the root its own process was configured
// with (ps_shard.hpp's shard_config), whatever directory a checkpoint request names.
#pragma once

#include <string>

namespace actorps {

/// "" when `dir` is `root` or lies under it, else why not: no root configured, or `dir`
/// resolves elsewhere. Both are resolved first (relative ones against the working directory,
/// `..` and every symlink of the part that exists followed), so neither `root/../x` nor a
/// symlink under the root pointing out passes. A symlink created after the check is not seen:
/// that takes write access to the root, which already owns its checkpoints.
std::string outside_checkpoint_root(const std::string& root, const std::string& dir);

} // namespace actorps
