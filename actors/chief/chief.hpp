// The chief: initialises the parameters (seeded) and hands each shard its part, spawns and
// monitors every other role, schedules evaluations every `eval_every` global clocks (at most one
// in flight, so training never waits), writes the metrics and the progress line, decides when
// training ends, and answers (run) with the summary after stopping every other actor.
//
// Its run goes through phases (waiting, placing, training, rolling_back, finishing, stopping),
// drawn in phases.cpp. Global clock = the smallest number of clocks finished by any live worker.
// Failures (recovery.cpp, rollback.cpp): a worker that dies is removed from every shard's clock
// table at once (leave), so the shards never wait on it, and a replacement enters at the
// shards' agreed clock; a lost evaluator is respawned; a lost shard sends the whole run back to
// the newest checkpoint. Checkpoints: checkpoints.cpp.
#pragma once

#include "actors/ps/training_defaults.hpp"
#include "actors/protocol/address.hpp"
#include "actors/protocol/data_plan.hpp"
#include "actors/ps/data_source.hpp"
#include "actors/ps/dataset.hpp"
#include "actors/protocol/messages.hpp"
#include "kernels/backend_factory.hpp"
#include "kernels/value_bounds.hpp"
#include "actors/chief/metrics.hpp"
#include "actors/chief/role_id.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace actorps {

/// A distributed run: the ps, worker and evaluator tasks join the chief over the network
/// instead of being spawned by it.
struct remote_tasks {
  std::vector<host_port> ps, workers;   ///< addresses in index order (workers dial the shards)
  std::optional<host_port> evaluator;
  data_source data;                     ///< what the workers and the evaluator load themselves
  std::chrono::milliseconds join_timeout{std::chrono::seconds(60)};
  /// The chief's cluster spec as cluster_view_text writes it: a task joining with another is
  /// refused ("": not checked).
  std::string cluster_view;
};

/// Fault injection (`--kill`): kill one role's actor with exit_reason::kill at a global clock,
/// a number of seconds after training began, or while a --resize moves the shards' states.
struct planned_kill {
  using role = role_kind;
  role target = role::worker;
  int32_t index = 0;
  int64_t at_clock = -1;     ///< >= 0: when the global clock reaches it
  double at_seconds = -1;    ///< >= 0: this long after training began
  int32_t at_resize = -1;    ///< >= 1: a shard, as the at_resize-th --resize restores the shards
};

/// A change of the number of shards or workers (`--resize ps=N@clock=C`, `workers=N@clock=C`,
/// or both: `ps=N,workers=M@clock=C`) at a clock boundary: once every shard has reached clock C
/// the run goes on from there on N shards, M workers (chief/resize.cpp). 0: unchanged.
struct planned_resize {
  int32_t shards = 0;
  int64_t at_clock = 0;
  int32_t workers = 0;
};

/// Whether a change of shards copies its sparse rows ahead while the run trains (`--copy-ahead`,
/// copy_ahead.cpp): automatic when a core is left beyond the workers and shards.
enum class copy_ahead_policy { automatic, always, never };

/// Who writes the shard files of a checkpoint (`--checkpoint-writer`).
enum class checkpoint_writer {
  shards,  ///< each shard its own, into the checkpoint directory: a filesystem the chief and
           ///< every ps task share (one host, NFS, a shared volume)
  chief,   ///< the shards send their files' bytes to the chief, which writes them all: only the
           ///< chief's host needs the directory
};

/// Checkpoints (`--checkpoint-dir`, `--checkpoint-every`, `--keep`) and resuming from one.
struct checkpoint_config {
  std::string dir;                         ///< empty: no checkpoints
  int64_t every = 0;                       ///< global clocks between checkpoints (0: only the last)
  int keep = 3;                            ///< complete checkpoints kept (older ones removed)
  int full_every = 10;                     ///< every N-th checkpoint whole, the others deltas
                                           ///< of it (1: every one whole)
  std::optional<loaded_checkpoint> resume; ///< verified by the caller: the run continues from it
  std::string run_id;                      ///< this run's lineage (storage/checkpoint_lineage.hpp):
                                           ///< new, or the resumed checkpoint's
  std::string dataset;                     ///< the dataset's identity, recorded in every
                                           ///< checkpoint (storage/run_identity.hpp)
  checkpoint_writer writer = checkpoint_writer::shards;
  std::string key;                         ///< --checkpoint-key's bytes: manifests are signed
                                           ///< and checked (storage/checkpoint_signing.hpp)
  int64_t fail_at = -1;                    ///< fault injection: committing the checkpoint at
                                           ///< this clock fails (--kill disk@checkpoint=C)
  int64_t crash_at = -1;                   ///< fault injection: SIGKILL this process once the
                                           ///< first shard file of the checkpoint at this clock
                                           ///< is on disk (a crash between shard files)
  std::vector<stream_file> files;          ///< a streamed training directory's files, recorded
                                           ///< with each worker's position in them
  /// --init-from: another run's checkpoint, its shards set to clock 0, that the shards start
  /// from instead of the seeded initial values (unless the run resumes).
  std::optional<loaded_checkpoint> init_from;
  /// A resume by another number of workers, or of a run whose workers had plans
  /// (checkpoint_workers.hpp): each worker's minibatches from the checkpoint's clock on, and
  /// those every worker had trained by then; empty: each worker goes on in its own part.
  std::vector<data_plan> resume_plans = {};
  int64_t resume_batches = 0;
};

/// What writing one export version took (export_config::write).
struct export_written {
  uint64_t version = 0;  ///< DIR/<version>
  bool delta = false;    ///< the rows changed since the previous version only
  uint64_t bytes = 0;    ///< the version's files together
  uint64_t rows = 0;     ///< sparse rows the shards sent for it (all there were, or the changed)
  uint64_t removed = 0;  ///< tombstones the shards sent for it
};

/// Export versions written while training (`--export-every`): every `every` global clocks the
/// chief asks every shard for its state at that clock, as a checkpoint's: whole for a full
/// version, or for a delta the rows changed since the clock of the version before it. It hands
/// the states to `write` in an actor of its own, and asks the next version's while one is
/// written (states that come meanwhile wait; no more is asked until they are written). Training
/// never waits for either.
struct export_config {
  int64_t every = 0;  ///< global clocks between versions; 0: none while training
  int full_every = 1; ///< every full_every-th version full, the ones between deltas (1: all full)
  /// Writes the version of `clock` from each shard's ShardCheckpoint (shard order), whole or
  /// deltas; throws std::exception saying why it could not (the next is then asked whole).
  std::function<export_written(int64_t clock, const std::vector<wire_buffer>& shards)> write;
};

struct chief_config {
  train_spec spec;
  int batch = 64;
  int64_t steps = 0;              ///< clocks per worker
  int64_t eval_every = 0;         ///< global clocks between evaluations; 0: only the final one
  std::vector<int> slow_ms;       ///< per worker straggler delay (empty: none)
  std::shared_ptr<const dataset> train, test;  ///< simulate: the data the local roles use
  data_source source;             ///< where the data comes from (simulate: the local roles'
                                  ///< source; libsvm: each worker streams its part of the
                                  ///< training file from here); source.follow: a followed stream
  int64_t train_rows = 0;         ///< rows of the training set (for the epoch count)
  std::optional<remote_tasks> remote;  ///< set: distributed run, roles join instead of spawning
  std::shared_ptr<metrics_file> metrics;  ///< null: no metrics file
  bool progress = true;           ///< draw the progress line on stdout
  backend_kind backend = backend_kind::cpu;  ///< the workers' backend (auto: decided per host)
  std::vector<int> gpus{0};       ///< CUDA devices; worker w uses gpus[w % size]
  std::chrono::milliseconds request_timeout{std::chrono::minutes(2)};
  checkpoint_config checkpoints;
  std::vector<planned_kill> kills;
  /// In clock order, each after the one before (sync mode, one process, no standbys or export
  /// versions: resize_refusal says why not otherwise).
  std::vector<planned_resize> resizes;
  copy_ahead_policy copy_ahead = copy_ahead_policy::automatic;  ///< --copy-ahead
  int max_replacements = 3;       ///< per role index; then the run goes on without it
  /// Hot standbys per shard (--replicas): 0 none (a lost shard rolls back to a checkpoint), 1 a
  /// standby that takes over (simulate only; actors/roles/replication.hpp).
  int replicas = 0;
  /// The bounds of the shards this process spawns (simulate; kernels/value_bounds.hpp). A
  /// distributed run's ps tasks take theirs from their own flags (deployment_options::shard).
  value_bounds bounds;
  /// The summary's final snapshots carry every row of every sparse table with its key (what an
  /// export of the model needs); false: the dense values only.
  bool final_rows = false;
  /// --stop-file: with source.follow, the run ends (as at its last clock) once this file
  /// exists; "" none (chief/follow.cpp).
  std::string stop_file;
  export_config exports;
  /// How the spec's optimizer, the batch and the tables' settings were chosen (the model's
  /// defaults under the user's choices): said at the start and in the start event. Empty
  /// model: not said (a chief configured directly).
  training_settings settings;
};

/// As the flag writes it: "ps=3@clock=10", "workers=4@clock=10", "ps=3,workers=4@clock=10".
std::string to_string(const planned_resize& r);

/// Why `cfg.resizes` cannot be run ("": they can): out of order, a shard count out of range, a
/// clock not within the run, or a run they are not built for yet.
std::string resize_refusal(const chief_config& cfg);

/// Spawns the chief; it starts the run when it receives (run).
chief_actor spawn_chief(caf::actor_system& sys, chief_config cfg);

} // namespace actorps
