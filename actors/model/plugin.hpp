// A model as a plug-in: its named tensors, a trainer per worker and an evaluation hook. The
// runtime owns the loop (pull → step → push, recovery, checkpoints, the SSP bound); the plug-in
// owns the math. The MLP (mlp_plugin.hpp) is one plug-in; register others with register_model.
#pragma once

#include "actors/data/batch_source.hpp"
#include "actors/data/dataset.hpp"
#include "actors/protocol/model_spec.hpp"
#include "kernels/backend_factory.hpp"

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
};

/// One worker's half of the model: called once per clock from the worker's own thread.
class trainer {
public:
  virtual ~trainer() = default;
  /// Computes, at `params` (every tensor of the spec, flat in model order), the gradient of the
  /// mean loss over the minibatch of `clock` into `grad` (same layout, every value written).
  virtual step_loss step(int64_t clock, const float* params, float* grad) = 0;
  /// What it computes on: "cpu", "cuda", ...; shown in train events and the summary.
  virtual std::string device() const { return "cpu"; }
};

/// The evaluator's view of a model on the test split.
struct eval_metrics {
  double accuracy = 0;  ///< fraction of rows predicted right (classification); 0 if meaningless
  double loss = 0;      ///< mean loss per row
  int64_t rows = 0;
};

class evaluation {
public:
  virtual ~evaluation() = default;
  /// Test metrics at `params` (flat, model order). Called from the evaluator's own thread.
  virtual eval_metrics evaluate(const float* params) = 0;
};

class model_plugin {
public:
  virtual ~model_plugin() = default;
  /// The tensors the shards hold for this model (and the name that finds this plug-in again).
  virtual model_spec spec() const = 0;
  /// Why data with `cols` features and `classes` classes cannot train this model ("" if it can).
  virtual std::string check_data(int cols, int classes) const = 0;
  /// A trainer for one worker; throws std::exception saying why it cannot (no GPU, ...).
  virtual std::unique_ptr<trainer> make_trainer(const trainer_context& ctx) const = 0;
  /// The evaluation hook over `test`; throws std::exception saying why it cannot.
  virtual std::unique_ptr<evaluation> make_evaluation(std::shared_ptr<const dataset> test) const = 0;
};

} // namespace actorps
