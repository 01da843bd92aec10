// Which run a checkpoint directory belongs to. A run gets an id when it starts fresh and keeps
// it through every resume; each checkpoint directory names it in a small `run-id` file written
// before anything else (so an unfinished checkpoint is attributable too) and in its manifest.
// A run prunes, resumes from and rolls back to its own checkpoints only, and a checkpoint
// directory that holds another run's complete checkpoints is refused at start unless they are
// moved aside (--overwrite-checkpoints): a new run can neither delete its own new checkpoints
// because an older run's clocks are higher, nor be silently resumed from the older run's.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace actorps {

inline constexpr const char* run_id_file_name = "run-id";

/// A fresh run's id: 16 random hex digits.
std::string new_run_id();

/// Writes `run_id` into checkpoint directory `dir` durably; throws checkpoint_error.
void write_run_id(const std::filesystem::path& dir, const std::string& run_id);

/// The id of the run that made checkpoint directory `dir`: its run-id file, else its manifest's
/// run_id; "" when neither says (a checkpoint of an older actorps, or no checkpoint at all).
std::string run_id_of(const std::filesystem::path& dir);

/// The complete checkpoints (ckpt-<clock> directories with a manifest) under `root` made by
/// another run than `run_id`, newest first.
std::vector<std::filesystem::path> other_runs_checkpoints(const std::filesystem::path& root,
                                                          const std::string& run_id);

/// Moves `dirs` into a new directory root/superseded-<UTC time>[-N]/ (where no resume or prune
/// looks) and returns it; throws checkpoint_error.
std::filesystem::path move_aside(const std::filesystem::path& root,
                                 const std::vector<std::filesystem::path>& dirs);

} // namespace actorps
