// A model as a plug-in: its named tensors, a trainer per worker and an evaluation hook. The
// runtime owns the loop (pull → step → push, recovery, checkpoints, the SSP bound); the plug-in
// owns the math. The MLP (mlp_plugin.hpp) is one plug-in; register others with register_model.
#pragma once

#include "actors/ps/backend_kind.hpp"
#include "actors/ps/batch_source.hpp"
#include "actors/ps/binary_metrics.hpp"
#include "actors/ps/data_source.hpp"
#include "actors/ps/dataset.hpp"
#include "actors/ps/feature_schema.hpp"
#include "actors/ps/model_spec.hpp"
#include "actors/ps/training_defaults.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace actorps {

/// Sums over one minibatch, as a trainer returns them.
struct step_loss {
  double loss_sum = 0;  ///< summed over the rows (the progress line shows loss_sum / rows)
  int64_t rows = 0;
};

/// What a worker's trainer is given when the runtime creates it.
struct trainer_context {
  int worker = 0;        ///< this worker's index, 0 ≤ worker < workers
  int workers = 1;
  int batch = 64;        ///< rows per minibatch (= data.batch_size())
  uint64_t seed = 1;     ///< the run's seed
  const batch_source* data = nullptr;  ///< this worker's minibatches; outlives the trainer
  backend_kind backend = backend_kind::cpu;  ///< where to compute (automatic: decide here)
  int device = 0;        ///< CUDA device index
  /// Where the training data is. In-memory data arrive as `data`; a plug-in that streams its
  /// own (libsvm: each worker reads part `worker` of `workers` of the file) opens it from here.
  data_source source;
};

/// One sparse table's rows for one minibatch. The trainer names the keys its batch reads
/// (trainer::keys), the runtime de-duplicates them, pulls each distinct key's row once from the
/// shard that owns it, and hands them to trainer::step; after the step it pushes `grads`.
struct table_rows {
  uint32_t dim = 0;               ///< floats per row (the table's spec)
  std::vector<uint64_t> keys;     ///< the distinct keys, ascending
  std::vector<uint32_t> inverse;  ///< for each key the trainer named, in its order: its index
                                  ///< in `keys`
  std::vector<float> values;      ///< keys.size() × dim: each key's row as pulled
  std::vector<float> grads;       ///< keys.size() × dim, zeroed before step: the trainer adds
                                  ///< each use's gradient of the mean loss, so a key used twice
                                  ///< pushes the sum of both
};

/// One worker's half of the model: called once per clock from the worker's own thread. A dense
/// model implements the first step(); a model with sparse tables implements keys() and the
/// second step().
class trainer {
public:
  virtual ~trainer() = default;
  /// Computes, at `params` (every tensor of the spec, flat in model order), the gradient of the
  /// mean loss over the minibatch of `clock` into `grad` (same layout, every value written).
  /// The default throws std::logic_error: a sparse model's trainer needs its tables.
  virtual step_loss step(int64_t clock, const float* params, float* grad);
  /// Sparse models: the keys of each sparse table (model spec order; `per_table` arrives sized
  /// and emptied) that the minibatch of `clock` reads, in the order step() will find them in
  /// table_rows::inverse; repeats welcome. The runtime calls keys(c + 1) right after step(c),
  /// to pull clock c + 1's rows with clock c's push. Default: no keys.
  virtual void keys(int64_t clock, std::vector<std::vector<uint64_t>>& per_table);
  /// As the first step(), with each sparse table's rows for the minibatch (spec order): reads
  /// tables[t].values, adds into tables[t].grads. The default calls the first step().
  virtual step_loss step(int64_t clock, const float* params, float* grad,
                         std::vector<table_rows>& tables);
  /// What it computes on: "cpu", "cuda", ...; shown in train events and the summary.
  virtual std::string device() const { return "cpu"; }
};

/// The evaluator's view of a model on the test split.
struct eval_metrics {
  double accuracy = 0;  ///< fraction of rows predicted right (classification); 0 if meaningless
  double loss = 0;      ///< mean loss per row (binary models: the logloss)
  int64_t rows = 0;
  double auc = -1;      ///< binary models: ROC AUC over the rows; -1: not computed
  double gauc = -1;     ///< binary models with test groups: group_auc; -1: not computed
  double calibration = -1;  ///< binary models: mean prediction / mean label; -1: not computed
  /// Binary models with test slices: the AUC of the slice_auc_top largest, largest first
  /// (top_slice_aucs), and the rows of the others (-1: not computed).
  std::vector<slice_auc> slices = {};
  int64_t slice_rest_rows = -1;
};

/// The slices per-slice AUC reports (--slice-auc): the 10 holding most test rows, enough to
/// read a field's head (the few values most traffic has) without flooding each evaluation.
inline constexpr std::size_t slice_auc_top = 10;

/// The evaluator's half of a model. A dense model implements the first evaluate(); a model with
/// sparse tables implements keys() and the second.
class evaluation {
public:
  virtual ~evaluation() = default;
  /// Test metrics at `params` (flat, model order). Called from the evaluator's own thread. The
  /// default throws std::logic_error: a sparse model's evaluation needs its tables.
  virtual eval_metrics evaluate(const float* params);
  /// Sparse models: every key of each table (spec order; `per_table` arrives sized and emptied)
  /// that the test split reads; repeats welcome. Asked once; the evaluator then pulls only
  /// these rows for every evaluation. Default: none.
  virtual void keys(std::vector<std::vector<uint64_t>>& per_table);
  /// As the first evaluate(), with those rows (table_rows::grads stay empty). The default calls
  /// the first evaluate().
  virtual eval_metrics evaluate(const float* params, const std::vector<table_rows>& tables);
};

/// For a plug-in's trainer and evaluation: throws std::logic_error unless the runtime handed exactly one table of rows of `dim` floats
/// with `uses` keys named (and gradients when `grads`).
void check_one_table(const char* model, const std::vector<table_rows>& tables, uint32_t dim,
                     std::size_t uses, bool grads);

/// Test metrics of a binary model from its logits z (n) against 0/1 labels: exact ROC AUC, mean
/// log loss (computed from the logits, exact where a probability would round to 0 or 1),
/// accuracy at p ≥ 0.5, calibration (kernels/binary_metrics.hpp) and, given each row's group
/// (dataset::groups.gauc, not empty), the group AUC, and given each row's slice
/// (groups.slices), the AUC of the largest slices.
eval_metrics binary_metrics_from_logits(const float* z, const float* labels, std::size_t n,
                                        const dataset::key_groups& groups = {});

class model_plugin {
public:
  virtual ~model_plugin() = default;
  /// The tensors the shards hold for this model (and the name that finds this plug-in again).
  virtual model_spec spec() const = 0;
  /// Why data with `cols` features and `classes` classes cannot train this model ("" if it can).
  virtual std::string check_data(int cols, int classes) const = 0;
  /// Why this model cannot read data of kind `what` ("" if it can). The default takes every
  /// kind the runtime hands over in memory and refuses the streamed ones (libsvm, criteo),
  /// which only a plug-in that reads its own files can train on.
  virtual std::string check_source(data_source::kind what) const;
  /// Why this model cannot read a log `schema` describes (--schema; "" if it can). Asked only
  /// when check_source took data_source::kind::logs. Default: "".
  virtual std::string check_schema(const feature_schema& schema) const {
    (void)schema;
    return "";
  }
  /// This model shaped for the logs `schema` describes (its spec's name then says the shape,
  /// so that every process builds the same), or null when it stays as it is. Default: null.
  virtual std::unique_ptr<model_plugin> for_schema(const feature_schema& schema) const {
    (void)schema;
    return nullptr;
  }
  /// A trainer for one worker; throws std::exception saying why it cannot (no GPU, ...).
  virtual std::unique_ptr<trainer> make_trainer(const trainer_context& ctx) const = 0;
  /// The evaluation hook over `test`; throws std::exception saying why it cannot.
  virtual std::unique_ptr<evaluation> make_evaluation(std::shared_ptr<const dataset> test) const = 0;
  /// The optimizer, rates, batch, epochs and admission this model trains well with; a run
  /// takes each one its user did not choose (training_defaults.hpp). Default: the MLP's.
  virtual training_defaults defaults() const { return {}; }
};

} // namespace actorps
