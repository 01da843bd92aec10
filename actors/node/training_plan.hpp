// The planner: the options of a run (actors/ps/training_flags.hpp) checked alone and against
// each other, and mapped to the chief's configuration and where the data is; what `actorps
// simulate`, the chief task and train() run. Private to actors/node.
#pragma once

#include "actors/chief/chief.hpp"
#include "actors/ps/data_source.hpp"
#include "actors/ps/training_defaults.hpp"
#include "actors/ps/training_flags.hpp"

#include <memory>
#include <string>
#include <vector>

namespace actorps {

/// Parses one --kill value: ROLE:INDEX@clock=C, ROLE:INDEX@seconds=T (ROLE worker, ps or
/// evaluator), process@checkpoint=C (sets *crash_at) or disk@checkpoint=C (sets *disk_fail_at);
/// throws usage_error naming the value.
planned_kill parse_kill(const std::string& text, int workers, int shards, int64_t* crash_at,
                        int64_t* disk_fail_at = nullptr);

/// Parses one --resize value, ps=N@clock=C; throws usage_error naming the value.
planned_resize parse_resize(const std::string& text);

/// --slice-auc FIELD: sets the source's slice field, or throws usage_error naming the flag.
void set_slice_field(data_source& d, const std::string& field);

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

/// The data of a run the library describes (train(), train_cluster()): its source as a value
/// rather than --dataset's text, and its shape once its splits are loaded.
struct known_data {
  data_source source;
  int64_t train_rows = 0;  ///< rows of the training split; 0: not known (nothing checked)
  int cols = 0;            ///< features of a row
  int classes = 0;
  std::string identity;    ///< what checkpoints record as the dataset ("": the source's)
};

/// Checks every flag, alone and against the others, touching nothing: throws usage_error
/// naming the flag, or returns the parsed values. With `known`, the data is that (--dataset and
/// the flags around it are not read) and its shape, when known, is checked against the model.
checked_flags check_training_flags(const training_flags& flags,
                                   const known_data* known = nullptr);

/// Turns checked flags into the plan (units, defaults, derived counts); no I/O: the metrics
/// file and the checkpoint to resume are left to open_training_files.
training_plan build_training_plan(const training_flags& flags, const checked_flags& checked);

/// The plan's side effects: opens (truncates) the metrics file, probes that the checkpoint
/// directory is writable (creating it), and loads the checkpoint --resume names (saying so on
/// stdout; checkpoint_plan.hpp). Throws usage_error naming the flag.
/// With `known`, the rows are the known data's (nothing is counted) and the process's log level
/// is left as it is.
void open_training_files(const training_flags& flags, training_plan& plan,
                         const known_data* known = nullptr);

/// check_training_flags, build_training_plan, then open_training_files. `--ps` and `--workers`
/// may be overridden by the caller (a cluster spec fixes them).
training_plan plan_training(const training_flags& flags);

/// The library's options as the planner's (what each would be typed as on the command line:
/// a field set is a flag typed), so that train() and the command check and map alike.
training_flags flags_of(const train_options& o);

/// train() and train_cluster(): flags_of, then the planner on the data as loaded (`data`),
/// with the dense optimizer's hyper-parameters that have no flag (train_options::optimizer).
/// Throws usage_error naming the flag.
training_plan plan_library_run(const train_options& o, const known_data& data);

} // namespace actorps
