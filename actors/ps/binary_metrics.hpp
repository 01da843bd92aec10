// How well a binary model's scores separate clicks from non-clicks, as the runtime's evaluations
// and `actorps evaluate` measure it. Implemented by the kernels (kernels/binary_metrics.cpp;
// kernels/binary_metrics.hpp holds the rest of them).
#pragma once

#include <cstddef>
#include <cstdint>

namespace actorps {

/// The area under the ROC curve: the probability that a random positive scores above a random
/// negative, a tie counting one half (the Mann–Whitney U statistic with mid-ranks, divided by
/// positives × negatives). Exact, O(n log n). Only the order of the scores matters, so they may
/// be probabilities or logits. NaN when one class is absent (no pair to compare) or a score is
/// NaN. Throws std::invalid_argument for a label that is not 0 or 1, naming its index.
double roc_auc(const float* scores, const float* labels, size_t n);

/// Group AUC (GAUC, as CTR teams read it: AUC per user, averaged): roc_auc of each group's
/// rows (row i in group groups[i]), averaged weighting each group by its rows, over the groups
/// holding both classes (a group of clicks alone, or of non-clicks alone, has no AUC and is
/// left out). NaN when no group holds both, or a score is NaN. Throws as roc_auc for a bad
/// label.
double group_auc(const float* scores, const float* labels, const uint64_t* groups, size_t n);

/// The mean log loss of the n rows from logits z (p = sigmoid(z)), in double, without a clamp,
/// as log(1 + exp(-z)) for y = 1 and log(1 + exp(z)) for y = 0: exact where p would round to 0
/// or 1. Throws std::invalid_argument for a label that is not 0 or 1.
double mean_logloss_from_logits(const float* logits, const float* labels, size_t n);

/// One slice of a test set: the rows sharing one value of a key field (its key).
struct slice_auc {
  uint64_t key = 0;
  int64_t rows = 0;
  int64_t positives = 0;  ///< rows labelled 1
  double auc = 0;         ///< roc_auc of its rows; NaN when they hold one class only
};

} // namespace actorps
