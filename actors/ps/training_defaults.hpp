// The settings a model trains well with, declared by its plug-in (model_plugin::defaults), and
// the one mapping from what a user chose to the settings a run uses, for every way to start a
// run (the command's training flags, train_options): each setting the user chose overrides the
// model's, field by field; the others are the model's.
#pragma once

#include "actors/ps/model_spec.hpp"
#include "actors/ps/optimizer.hpp"
#include "actors/ps/row_optimizer.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace actorps {

/// What a model trains with when the user says nothing. These member defaults are the MLP's
/// (and any plug-in's that declares none): momentum at 0.05, batch 64, 5 epochs.
struct training_defaults {
  optimizer_kind optimizer = optimizer_kind::momentum;  ///< the dense tensors' (on the shards)
  float lr = 0;             ///< its learning rate; 0: default_learning_rate(optimizer)
  float momentum = 0.9f;    ///< the momentum optimizer's coefficient
  int batch = 64;           ///< rows per minibatch and worker
  double epochs = 5;        ///< passes over the training rows
  float table_lr = 0;       ///< every sparse table's learning rate; 0: each table's own (spec)
  int64_t admit_after = -1; ///< every sparse table's admission count; -1: each table's own
  int64_t evict_after = -1; ///< every sparse table's eviction (clocks); -1: each table's own
  int64_t max_rows = -1;    ///< every sparse table's rows per shard; -1: each table's own
  int64_t admission_memory = -1;  ///< every sparse table's sketch bytes; -1: each table's own
};

/// What the user chose (a flag typed, an option set); a field left empty takes the model's.
/// Values are taken as they are: the caller checks them (a negative lr stays negative).
struct training_choices {
  std::optional<optimizer_kind> optimizer;
  std::optional<float> lr;                 ///< 0: the optimizer's default
  std::optional<float> momentum;
  std::optional<int> batch;
  std::optional<double> epochs;
  std::optional<row_optimizer_kind> table_optimizer;  ///< with that optimizer's own settings
  std::optional<float> table_lr;           ///< 0: each table's own
  std::optional<int64_t> admit_after;      ///< -1: each table's own
  std::optional<int64_t> evict_after;      ///< -1: each table's own; 0: none
  std::optional<int64_t> max_rows;         ///< -1: each table's own; 0: no bound
  std::optional<int64_t> admission_memory; ///< -1: each table's own; 0: exact counters
};

/// The settings a run uses, and which of them the user chose.
struct training_settings {
  std::string model;               ///< the model's name (model_spec::name)
  training_defaults values;        ///< in effect; `lr` is never 0 here
  std::optional<row_optimizer_kind> table_optimizer;  ///< set: every table's, chosen
  std::vector<std::string> given;  ///< the fields chosen, named as their flags ("lr", "batch")
};

/// The model's defaults overridden by `chosen`, field by field. The model's learning rate goes
/// with its optimizer: another optimizer chosen without a rate runs at that optimizer's default
/// rate; likewise the model's table rate with another table optimizer.
training_settings resolve_training(const std::string& model, const training_defaults& defaults,
                                   const training_choices& chosen);

/// The dense optimizer in effect: `base` (Adam's betas, ...) with the settings' kind, rate and
/// momentum.
optimizer_config dense_optimizer(const training_settings& settings, optimizer_config base = {});

/// Sets every sparse table of `spec` to the settings' table optimizer (its own defaults), rate,
/// admission, eviction and admission memory, where set; a table keeps its own otherwise.
/// Throws std::invalid_argument naming the table when the result is not a valid table
/// (invalid_table_config).
void apply_table_settings(const training_settings& settings, model_spec& spec);

/// The settings in effect on one line, the tables' as `spec` holds them (after
/// apply_table_settings): "model=dlrm:16:64-32:128-64 optimizer=adam lr=0.003 momentum=0.9
/// batch=256 epochs=1 table_lr=0.1 admit_after=20 (the model's defaults; given: --lr)". A
/// followed stream (`followed`) has no epochs: "epochs=none (a followed stream)".
std::string describe(const training_settings& settings, const model_spec& spec,
                     bool followed = false);

} // namespace actorps
