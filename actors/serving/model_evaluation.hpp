// An exported model on data: class probabilities, and accuracy, loss and the confusion matrix
// on a labelled split. export_model (metadata.json) and `actorps evaluate` both call
// evaluate_model, so their numbers agree by construction.
#pragma once

#include "actors/ps/dataset.hpp"
#include "actors/serving/exported_model.hpp"
#include "kernels/backend.hpp"

#include <cstdint>
#include <vector>

namespace actorps {

/// Class probabilities of `rows` rows of x (rows × layers[0], host) on `be`: rows × classes.
std::vector<float> predict_probabilities(backend& be, const exported_model& model, const float* x,
                                         int rows);

/// The first class of highest probability in one row.
int predicted_class(const float* probabilities, int classes);

struct model_metrics {
  int64_t rows = 0;
  int64_t correct = 0;
  double accuracy = 0;   ///< correct / rows
  double loss = 0;       ///< mean of −log p(label); p floored at FLT_MIN (loss ≤ 87.3 per row)
                         ///< (CTR models: the mean log loss from the logits, no floor)
  double auc = -1;       ///< CTR models: ROC AUC over the rows; -1: not computed (classifiers)
  int classes = 0;
  std::vector<int64_t> confusion;  ///< classes × classes: [true label][predicted class]
};

/// The model on every row of a labelled split, on the CPU backend (the reference): predicted
/// class = predicted_class of predict_probabilities. Throws std::invalid_argument when the
/// split's columns or classes do not fit the model.
model_metrics evaluate_model(const exported_model& model, const dataset& split);

} // namespace actorps
