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

/// The flags as typed, before validation: the library's own options (train_options: every
/// field that means the same there, typed as there) and, beside them, what only the command
/// has or spells as text for the planner to parse (--dataset, --kill, --resize, ...). A field of
/// train_options keeps its meaning: unset (or -1 where it says so) is the model's or each
/// table's own; which of the model-defaulted flags were typed is also in `given`, as the
/// refusals quote them (--optimizer, --lr, --momentum, --batch, --epochs, --table-optimizer,
/// --table-lr, --admit-after, --evict-after, --max-rows-per-shard, --admission-memory, and
/// --export-every, whose 0 the command refuses where the library reads none). train() maps its
/// options here whole (flags_of), so that the command and the library are checked alike.
struct training_flags : train_options {
  std::string dataset = "fashion-mnist";  ///< --dataset: parsed into `source`
  std::string data_dir = default_fashion_mnist_dir, test;  ///< --data-dir, --test
  int64_t synthetic_rows = 8192, synthetic_test_rows = 2048;
  std::string schema;              ///< --schema FILE: the feature schema of tsv:/csv:PATH
  bool follow = false;             ///< --follow: the training directory is followed as it grows
  std::string stop_file;           ///< --stop-file PATH: a followed run ends once it exists
  std::string gauc_group;          ///< --gauc-group FIELD: C1..C26 of a Criteo test split, or
                                   ///< a key field of --schema
  std::string table_optimizer;     ///< --table-optimizer; "" keeps each sparse table's own
  std::string backend = "auto", gpus = "0";  ///< --backend, --gpus
  std::string wire_precision = "fp32";  ///< --wire-precision: fp32 | bf16 (workers' pushes)
  double request_timeout = 120;    ///< --request-timeout, seconds
  std::vector<std::string> slow;   ///< --slow worker:I=MS
  std::string log_level = "info";  ///< --log-level: error, warn, info or debug
  bool resume_given = false;       ///< --resume appeared (its value may be empty)
  bool overwrite_checkpoints = false;  ///< another run's checkpoints in --checkpoint-dir go aside
  std::string writer = "shards";   ///< --checkpoint-writer: shards | chief
  std::string init_from;           ///< --init-from DIR: another run's checkpoint to start from
  bool staleness_given = false;    ///< --staleness was typed (not left at its default)
  int keep = 3;                    ///< --keep
  int max_replacements = 3;        ///< --max-replacements
  std::vector<std::string> kill;   ///< --kill as typed (train_options::kills: as values)
  std::vector<std::string> resize; ///< --resize as typed (train_options::resizes: as values)
  value_bounds bounds;             ///< --max-gradient, --max-parameter, --gradient-norm-bound
  int prometheus_port = 0;         ///< --prometheus-port: serve /metrics there; 0: not
  std::set<std::string> given;     ///< the flags above that were typed (note_given_flags)
};

/// Throws usage_error naming the flag (--max-gradient, --max-parameter, --gradient-norm-bound)
/// when a bound is not positive and finite.
void check_value_bounds(const value_bounds& bounds);

/// The most CAF scheduler threads --threads may ask for: 4 per core of this host (a bound that
/// names the flag instead of failing in thread creation under an address-space limit).
int max_scheduler_threads();

} // namespace actorps
