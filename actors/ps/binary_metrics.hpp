// How well a binary model's scores separate clicks from non-clicks, as the runtime's evaluations
// and `actorps evaluate` measure it: the kernels' own functions (kernels/binary_metrics.hpp holds
// the rest of them); actors/node/binary_metrics.cpp holds both declarations together so that
// they cannot drift.
#pragma once

#include <cstddef>
#include <cstdint>

namespace actorps {

/// The area under the ROC curve: the probability that a random positive scores above a random
/// negative, a tie counting one half. Exact; only the order of the scores matters, so they may
/// be probabilities or logits. NaN when one class is absent or a score is NaN. Throws
/// std::invalid_argument for a label that is not 0 or 1, naming its index.
double roc_auc(const float* scores, const float* labels, size_t n);

/// Group AUC (AUC per user, averaged, as CTR teams read it): roc_auc of each group's rows (row
/// i in group groups[i]), averaged weighting each group by its rows, over the groups holding
/// both classes. NaN when no group holds both, or a score is NaN. Throws as roc_auc.
double group_auc(const float* scores, const float* labels, const uint64_t* groups, size_t n);

/// The mean log loss of the n rows from logits z (p = sigmoid(z)), in double, without a clamp:
/// exact where p would round to 0 or 1. Throws std::invalid_argument for a label that is not 0
/// or 1.
double mean_logloss_from_logits(const float* logits, const float* labels, size_t n);

} // namespace actorps
