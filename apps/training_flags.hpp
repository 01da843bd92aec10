// The training flags shared by `actorps simulate` and `actorps chief`: what to train and how.
#pragma once

#include "actors/chief/chief.hpp"
#include "actors/model/training_defaults.hpp"
#include "actors/protocol/data_source.hpp"
#include "actors/ps/value_bounds.hpp"

#include <boost/program_options.hpp>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorps {

/// A bad flag or bad input: what() names the flag (or file) and what is wrong.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The flags as typed, before validation. A flag whose default is the model's (--optimizer,
/// --lr, --momentum, --batch, --epochs, --table-optimizer, --table-lr, --admit-after) counts
/// only when typed (`given`); its member here holds the MLP's default until then.
struct training_flags {
  int ps = 2, workers = 2, batch = 64, threads = 0, staleness = 2;
  std::string model = "784-256-128-10", dataset = "fashion-mnist",
              data_dir = default_fashion_mnist_dir, test, optimizer = "momentum", mode = "ssp",
              lr_schedule = "cosine", metrics, backend = "auto", gpus = "0", export_dir;
  double epochs = 5, lr = 0, momentum = 0.9, request_timeout = 120;
  int64_t steps = 0, eval_every = 100, synthetic_rows = 8192, synthetic_test_rows = 2048;
  uint64_t seed = 1;
  uint32_t block_floats = 4096;
  std::vector<std::string> slow;
  bool no_progress = false;
  std::string log_level = "info";  ///< --log-level (apps/log_level_flag.hpp)
  std::string gauc_group;          ///< --gauc-group FIELD: C1..C26 of a Criteo test split, or
                                   ///< a key field of --schema
  std::string slice_auc;           ///< --slice-auc FIELD: as gauc_group
  std::string schema;              ///< --schema FILE: the feature schema of tsv:/csv:PATH
  std::string checkpoint_dir, resume;  ///< resume: a directory, "auto", or "" (--checkpoint-dir)
  bool resume_given = false;       ///< --resume appeared (its value may be empty)
  bool overwrite_checkpoints = false;  ///< another run's checkpoints in --checkpoint-dir go aside
  std::string writer = "shards";  ///< --checkpoint-writer: shards | chief
  std::string checkpoint_key;     ///< --checkpoint-key FILE: sign checkpoints, refuse unsigned
  std::string init_from;          ///< --init-from DIR: another run's checkpoint to start from
  bool staleness_given = false;    ///< --staleness was typed (not left at its default)
  int64_t checkpoint_every = 0;
  int keep = 3;
  int full_checkpoint_every = 10;  ///< --full-checkpoint-every
  int64_t export_every = -1;       ///< --export-every; -1: not given
  int full_export_every = 10;      ///< --full-export-every
  int max_replacements = 3;
  std::vector<std::string> kill;   ///< simulate only
  std::vector<std::string> resize; ///< --resize ps=N@clock=C: simulate only
  int replicas = 0;                ///< --replicas: hot standbys per shard (simulate, chief)
  std::string table_optimizer;     ///< "" keeps each sparse table's own
  double table_lr = 0;             ///< 0 keeps each sparse table's own
  int64_t admit_after = -1;        ///< -1 keeps each sparse table's own
  int64_t evict_after = -1;        ///< --evict-after; -1 keeps each sparse table's own
  int64_t max_rows_per_shard = -1; ///< --max-rows-per-shard; -1 keeps each sparse table's own
  int64_t admission_memory = -1;   ///< --admission-memory; -1 keeps each sparse table's own
  value_bounds bounds;             ///< --max-gradient, --max-parameter (apps/value_bound_flags.hpp)
  std::string wire_precision = "fp32";  ///< --wire-precision: fp32 | bf16 (workers' pushes)
  std::string tensorboard;         ///< --tensorboard DIR: TensorBoard event files ("" none)
  int prometheus_port = 0;         ///< --prometheus-port: serve /metrics there; 0: not
  std::set<std::string> given;     ///< the model-defaulted flags typed (note_given_flags)
  bool follow = false;             ///< --follow: the training directory is followed as it grows
  std::string stop_file;           ///< --stop-file PATH: a followed run ends once it exists
};

/// Adds every training flag, with its default and help text, bound to `flags`.
void add_training_options(boost::program_options::options_description& desc,
                          training_flags& flags);

/// Records which flags were typed rather than left at their defaults (--resume, --staleness,
/// and those whose default is the model's); call after the variables map has been stored.
void note_given_flags(const boost::program_options::variables_map& vm, training_flags& flags);

/// Adds --kill (fault injection) and --replicas (hot standbys); `actorps simulate` only.
void add_fault_options(boost::program_options::options_description& desc, training_flags& flags);

/// Adds --follow and --stop-file (a training directory followed as it grows): `actorps
/// simulate` and `actorps chief` (whose worker tasks read the same directory, and whose host
/// watches it and the stop file).
void add_stream_options(boost::program_options::options_description& desc, training_flags& flags);

/// Adds --replicas (hot standbys): `actorps simulate` and `actorps chief`.
void add_replica_options(boost::program_options::options_description& desc, training_flags& flags);

/// Parses one --kill value: ROLE:INDEX@clock=C, ROLE:INDEX@seconds=T (ROLE worker, ps or
/// evaluator), process@checkpoint=C (sets *crash_at) or disk@checkpoint=C (sets *disk_fail_at);
/// throws usage_error naming the value.
planned_kill parse_kill(const std::string& text, int workers, int shards, int64_t* crash_at,
                        int64_t* disk_fail_at = nullptr);

/// Parses one --resize value, ps=N@clock=C; throws usage_error naming the value.
planned_resize parse_resize(const std::string& text);

/// The validated run: the chief's configuration (without loaded data) and where the data is.
struct training_plan {
  chief_config chief;
  data_source data;
  std::shared_ptr<const dataset> train_split;  ///< set when planning had to read it (a CSV)
  int scheduler_threads = 0;
  std::string export_dir;  ///< empty: no export (actors/serving/export_after_run.hpp)
  /// versions while training (actors/serving/export_versions.hpp); 0: none
  int64_t export_every = 0;
  int full_export_every = 10;
  uint16_t prometheus_port = 0;  ///< 0: no /metrics endpoint
};

/// The help of --prometheus-port (training flags, and a ps, worker or evaluator task's).
extern const char* const prometheus_port_help;

/// The flags' values once checked: what the plan is built from, parsed.
struct checked_flags {
  model_spec model;                 ///< the --model plug-in's tensors
  data_source data;                 ///< what --dataset names (its shape is read later, I/O)
  consistency mode = consistency::ssp;
  lr_schedule schedule = lr_schedule::constant;
  training_settings settings;       ///< the model's defaults under the typed flags
  actorps::wire_precision wire = actorps::wire_precision::fp32;  ///< --wire-precision
  backend_kind backend = backend_kind::cpu;
  std::vector<int> gpus;
  std::vector<int> slow_ms;         ///< per worker
  std::vector<planned_kill> kills;
  std::vector<planned_resize> resizes;  ///< --resize, in the order given
  int64_t crash_at = -1;            ///< --kill process@checkpoint=C, else -1
  int64_t disk_fail_at = -1;        ///< --kill disk@checkpoint=C, else -1
  int64_t train_rows = 0;           ///< rows of the training set, as far as known without I/O
};

/// Checks every flag, alone and against the others, touching nothing: throws usage_error
/// naming the flag, or returns the parsed values.
checked_flags check_training_flags(const training_flags& flags);

/// The most CAF scheduler threads --threads may ask for: 4 per core of this host (a bound that
/// names the flag instead of failing in thread creation under an address-space limit).
int max_scheduler_threads();

/// Turns checked flags into the plan (units, defaults, derived counts); no I/O: the metrics
/// file and the checkpoint to resume are left to open_training_files.
training_plan build_training_plan(const training_flags& flags, const checked_flags& checked);

/// The plan's side effects: opens (truncates) the metrics file, probes that the checkpoint
/// directory is writable (creating it), and loads the checkpoint --resume names (saying so on
/// stdout; apps/checkpoint_plan.hpp). Throws usage_error naming the flag.
void open_training_files(const training_flags& flags, training_plan& plan);

/// check_training_flags, build_training_plan, then open_training_files. `--ps` and `--workers`
/// may be overridden by the caller (a cluster spec fixes them).
training_plan plan_training(const training_flags& flags);

/// Prints the end-of-run summary to stdout; returns the exit status it calls for (said on
/// stderr when not 0; deploy/exit_codes.hpp): 138 when every worker was lost before the last
/// clock, 1 when every checkpoint or the final one failed, else 0.
int print_summary(const run_summary& summary);

} // namespace actorps
