// The cluster spec: TensorFlow's TF_CONFIG JSON, so launchers that inject TF_CONFIG (Kubeflow's
// TFJob, for one) work unchanged:
//   {"cluster": {"chief": ["h0:2222"], "ps": ["h1:2222", ...], "worker": [...],
//                "evaluator": ["h5:2222"]},
//    "task": {"type": "worker", "index": 0}}
// Read from --cluster FILE plus --task TYPE:INDEX, or from the TF_CONFIG environment variable.
//
// As the TFJob operator writes it: job and task types in any case ("Worker", "PS"), "master"
// for the chief, an "environment" key (ignored), and an evaluator left out of the cluster that
// every replica gets — its own task is then evaluator:0, a task outside the cluster that dials
// the chief and that nobody dials (own_address is empty).
#pragma once

#include "actors/protocol/address.hpp"
#include "actors/ps/task_id.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorps {

/// Who owns the training loop decides the tasks a cluster has: the runtime's loop needs a chief
/// (and may have an evaluator); a user-owned loop (ps.hpp's task_cluster) has ps and worker
/// tasks only.
enum class loop_owner { runtime, user };

class cluster_spec {
public:
  /// Tasks of a job type, in index order (empty for a type the cluster lacks).
  const std::vector<host_port>& tasks(const std::string& type) const;
  int count(const std::string& type) const { return static_cast<int>(tasks(type).size()); }
  /// The address of a task; throws cluster_error for an unknown type or an index out of range.
  const host_port& address(const task_id& task) const;
  /// The address this task listens on, or none for the one task that may stand outside the
  /// cluster: evaluator:0 of a cluster without evaluators (TFJob leaves it out). Throws
  /// cluster_error as address() does for any other task the cluster lacks.
  std::optional<host_port> own_address(const task_id& task) const;

  /// At least one ps and one worker; for the runtime's loop exactly one chief and at most one
  /// evaluator, for a user's loop neither; known job types, no address used twice. Throws
  /// cluster_error.
  void validate(const std::string& source, loop_owner owner = loop_owner::runtime) const;

  std::map<std::string, std::vector<host_port>> jobs;
};

struct tf_config {
  cluster_spec cluster;
  std::optional<task_id> task;
};

/// Parses TF_CONFIG JSON; `source` (a file name, or "TF_CONFIG") goes into every error.
tf_config parse_tf_config(const std::string& json, const std::string& source,
                          loop_owner owner = loop_owner::runtime);

/// The largest cluster file read (--cluster): 1 MiB.
inline constexpr std::size_t max_cluster_file_bytes = std::size_t(1) << 20;

/// Reads and parses a TF_CONFIG-style file: a regular file of at most max_cluster_file_bytes
/// (a FIFO, a device or a directory is refused before any read); throws cluster_error
/// ("--cluster <path>: a FIFO, not a regular file").
tf_config read_tf_config_file(const std::string& path);

/// Only the "task" of TF_CONFIG JSON (none when it has no "task"): for --cluster FILE, whose
/// cluster comes from the file, with TF_CONFIG naming this replica's task.
std::optional<task_id> parse_tf_config_task(const std::string& json, const std::string& source);

/// Parses "worker:1" (any case; "master:0" is chief:0); throws cluster_error naming the text.
task_id parse_task(const std::string& text);

/// A job or task type as actorps names it: lower case, "master" (TFJob's older name for the
/// chief) becomes "chief". Unknown types are returned lower-cased, for the error that names them.
std::string canonical_task_type(const std::string& type);

/// The role names, in the order the chief reports them.
inline const std::vector<std::string>& task_types() {
  static const std::vector<std::string> types{"chief", "ps", "worker", "evaluator"};
  return types;
}

} // namespace actorps
