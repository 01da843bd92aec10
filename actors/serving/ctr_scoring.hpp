// A CTR model (ctr_model.hpp) on Criteo rows: the per-field row indices model.onnx takes, the
// logits, and AUC / log loss on a labelled split. The export (metadata.json), `actorps predict`
// and `actorps evaluate` all score through ctr_logits, so their numbers agree by construction;
// the math is the training's (kernels/dlrm for dlrm, kernels/wide_deep for wdl and deepfm,
// sparse_logits and the plug-in's dense dot for lr), on the model's rows, a key the model never
// saw reading row 0 (zeros).
#pragma once

#include "actors/ps/criteo_batch.hpp"
#include "actors/serving/ctr_model.hpp"
#include "actors/serving/model_evaluation.hpp"
#include "kernels/backend.hpp"

#include <cstdint>
#include <vector>

namespace actorps {

/// rows × fields: the row of each sample's key in its field's served vocabulary (served_keys;
/// 0 for an unknown key) — model.onnx's input "indices".
std::vector<int64_t> ctr_row_indices(const ctr_model& model, const criteo_batch& batch);

/// The logit z of each row of `batch` (dense already log1p-transformed, as the reader gives it),
/// computed on `be` (lr runs on the host). p(click) = sigmoid(z).
std::vector<float> ctr_logits(backend& be, const ctr_model& model, const criteo_batch& batch);

/// p(click) = σ(z) of each logit, as the kernels compute it (kernels/ctr_math.hpp).
std::vector<float> ctr_probabilities(const std::vector<float>& logits);

/// The model on every row of a labelled split, on the CPU backend: rows, ROC AUC (auc), mean log
/// loss from the logits (loss), accuracy at p ≥ 0.5 and its count (correct); no confusion
/// matrix. The run's evaluator computes the same figures (binary_metrics_from_logits).
model_metrics evaluate_ctr_model(const ctr_model& model, const criteo_batch& split);

} // namespace actorps
