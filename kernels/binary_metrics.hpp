// How well scores separate two classes: exact ROC AUC, group AUC, calibration and mean log loss,
// for a binary model's test set (labels 0 or 1).
#pragma once

#include "actors/ps/binary_metrics.hpp"  // roc_auc, group_auc, mean_logloss_from_logits, slice_auc

#include <cstddef>
#include <cstdint>
#include <vector>

namespace actorps {

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
