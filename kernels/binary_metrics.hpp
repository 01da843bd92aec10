// How well scores separate two classes: exact ROC AUC, group AUC, calibration and mean log loss,
// for a binary model's test set (labels 0 or 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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

/// One slice of a test set: the rows sharing one value of a key field (its key).
struct slice_auc {
  uint64_t key = 0;
  int64_t rows = 0;
  int64_t positives = 0;  ///< rows labelled 1
  double auc = 0;         ///< roc_auc of its rows; NaN when they hold one class only
};

/// Per-slice AUC: the rows cut by slices[i] into slices, the `top` holding most rows (a tie:
/// the smaller key first), largest first, each with its AUC. `rest_rows` gets the rows of the
/// slices left out. Throws as roc_auc for a bad label.
std::vector<slice_auc> top_slice_aucs(const float* scores, const float* labels,
                                      const uint64_t* slices, size_t n, size_t top,
                                      int64_t& rest_rows);

/// Calibration: the mean predicted probability σ(z) over the observed rate of label 1 (1: as
/// many clicks predicted as seen; above 1: too many). NaN when there is no row labelled 1.
double calibration_from_logits(const float* logits, const float* labels, size_t n);

/// Probabilities of the label 1 are clamped to [logloss_clamp, 1 - logloss_clamp] before the
/// log: a confident miss costs at most -ln(1e-7) ≈ 16.1 instead of infinity. 1e-7 is about a
/// float's resolution next to 1 (6e-8), so both ends are clamped alike.
inline constexpr double logloss_clamp = 1e-7;

/// The mean of -[y ln p + (1-y) ln(1-p)] over the n rows, p clamped as above, computed in
/// double. NaN for n == 0 or a NaN probability. Throws std::invalid_argument for a label that is
/// not 0 or 1.
double mean_logloss(const float* probabilities, const float* labels, size_t n);

/// The same loss from logits z (p = sigmoid(z)), computed without a clamp as
/// log(1 + exp(-z)) for y = 1 and log(1 + exp(z)) for y = 0: exact where p would round to 0 or 1.
double mean_logloss_from_logits(const float* logits, const float* labels, size_t n);

/// (probability, label) pairs collected across batches, scored at the end:
///   binary_scores test;
///   for (...) test.add(p.data(), batch.labels.data(), batch.rows());
///   double auc = test.auc(), loss = test.logloss();
class binary_scores {
public:
  void add(const float* probabilities, const float* labels, size_t n) {
    probabilities_.insert(probabilities_.end(), probabilities, probabilities + n);
    labels_.insert(labels_.end(), labels, labels + n);
  }
  void add(float probability, float label) {
    probabilities_.push_back(probability);
    labels_.push_back(label);
  }
  void clear() {
    probabilities_.clear();
    labels_.clear();
  }

  size_t size() const { return labels_.size(); }
  double auc() const { return roc_auc(probabilities_.data(), labels_.data(), size()); }
  double logloss() const { return mean_logloss(probabilities_.data(), labels_.data(), size()); }
  /// The fraction of rows labelled 1; NaN when empty.
  double positive_rate() const;

private:
  std::vector<float> probabilities_, labels_;
};

} // namespace actorps
