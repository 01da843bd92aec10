// The options of a run as `actorps simulate` and `actorps chief` take them (--name VALUE), before
// they are checked: what the command fills from its flags and hands to the library, which
// checks them alone and against each other and maps them to the run (one planner for every way
// to run).
#pragma once

#include "actors/ps.hpp"
#include "actors/ps/usage_error.hpp"
#include "actors/ps/value_bounds.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace actorps {

/// The flags as typed, before validation. What every way to run shares is the library's own
/// (common_run_options: --ps, --workers, --mode, --staleness, --optimizer, --lr, --momentum,
/// --lr-schedule, --seed, --block-floats), the rest as the command line spells it. A flag whose
/// default is the model's (--optimizer, --lr, --momentum, --batch, --epochs, --table-optimizer,
/// --table-lr, --admit-after) counts only when typed (`given`); until then its member here
/// holds the MLP's default (the optimizer: unset).
struct training_flags : common_run_options {
  int batch = 64, threads = 0;
  std::string model = "784-256-128-10", dataset = "fashion-mnist",
              data_dir = default_fashion_mnist_dir, test, metrics, backend = "auto", gpus = "0",
              export_dir;
  double epochs = 5, request_timeout = 120;
  int64_t steps = 0, eval_every = 100, synthetic_rows = 8192, synthetic_test_rows = 2048;
  std::vector<std::string> slow;
  bool no_progress = false;
  std::string log_level = "info";  ///< --log-level: error, warn, info or debug
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
  value_bounds bounds;             ///< --max-gradient, --max-parameter, --gradient-norm-bound
  std::string wire_precision = "fp32";  ///< --wire-precision: fp32 | bf16 (workers' pushes)
  std::string tensorboard;         ///< --tensorboard DIR: TensorBoard event files ("" none)
  int prometheus_port = 0;         ///< --prometheus-port: serve /metrics there; 0: not
  std::set<std::string> given;     ///< the model-defaulted flags typed (note_given_flags)
  bool follow = false;             ///< --follow: the training directory is followed as it grows
  std::string stop_file;           ///< --stop-file PATH: a followed run ends once it exists
};

/// Throws usage_error naming the flag (--max-gradient, --max-parameter, --gradient-norm-bound)
/// when a bound is not positive and finite.
void check_value_bounds(const value_bounds& bounds);

/// The most CAF scheduler threads --threads may ask for: 4 per core of this host (a bound that
/// names the flag instead of failing in thread creation under an address-space limit).
int max_scheduler_threads();

} // namespace actorps
