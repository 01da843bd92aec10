#include "kernels/binary_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace actorps {

namespace {

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

/// 1 or 0 for labels[i], or std::invalid_argument naming i.
bool positive(const float* labels, size_t i) {
  if (labels[i] == 1.0f) return true;
  if (labels[i] == 0.0f) return false;
  std::ostringstream message;
  message << "label " << labels[i] << " at index " << i << " is not 0 or 1";
  throw std::invalid_argument(message.str());
}

/// log(1 + exp(x)) without overflow for large x or loss of precision for very negative x.
double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

} // namespace

double roc_auc(const float* scores, const float* labels, size_t n) {
  uint64_t positives = 0;
  for (size_t i = 0; i < n; ++i) positives += positive(labels, i);
  const uint64_t negatives = n - positives;
  if (positives == 0 || negatives == 0) return not_a_number;
  if (std::any_of(scores, scores + n, [](float s) { return std::isnan(s); })) return not_a_number;

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Sum of the positives' 1-based ranks, a run of equal scores sharing its mid-rank. Ranks are
  // integers or halves below 2^53 for any n that fits in memory, so the sum is exact in double.
  double positive_rank_sum = 0;
  for (size_t run = 0; run < n;) {
    size_t end = run + 1;
    while (end < n && scores[order[end]] == scores[order[run]]) ++end;
    const double mid_rank = (static_cast<double>(run + 1) + static_cast<double>(end)) / 2;
    for (size_t k = run; k < end; ++k)
      if (labels[order[k]] == 1.0f) positive_rank_sum += mid_rank;
    run = end;
  }
  const double p = static_cast<double>(positives), q = static_cast<double>(negatives);
  return (positive_rank_sum - p * (p + 1) / 2) / (p * q);
}

double group_auc(const float* scores, const float* labels, const uint64_t* groups, size_t n) {
  if (std::any_of(scores, scores + n, [](float s) { return std::isnan(s); })) return not_a_number;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return groups[a] < groups[b]; });
  std::vector<float> group_scores, group_labels;
  double weighted = 0, rows = 0;
  for (size_t run = 0; run < n;) {
    size_t end = run + 1;
    while (end < n && groups[order[end]] == groups[order[run]]) ++end;
    group_scores.clear();
    group_labels.clear();
    for (size_t k = run; k < end; ++k) {
      group_scores.push_back(scores[order[k]]);
      group_labels.push_back(labels[order[k]]);
      positive(labels, order[k]);  // names the row's own index
    }
    const double auc = roc_auc(group_scores.data(), group_labels.data(), end - run);
    if (!std::isnan(auc)) {
      weighted += auc * static_cast<double>(end - run);
      rows += static_cast<double>(end - run);
    }
    run = end;
  }
  return rows > 0 ? weighted / rows : not_a_number;
}

std::vector<slice_auc> top_slice_aucs(const float* scores, const float* labels,
                                      const uint64_t* slices, size_t n, size_t top,
                                      int64_t& rest_rows) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return slices[a] < slices[b]; });
  struct run_of {
    size_t begin, end;  // in `order`
  };
  std::vector<run_of> runs;
  for (size_t run = 0; run < n;) {
    size_t end = run + 1;
    while (end < n && slices[order[end]] == slices[order[run]]) ++end;
    runs.push_back({run, end});
    run = end;
  }
  // most rows first; runs are in key order, so a stable sort puts the smaller key first
  std::stable_sort(runs.begin(), runs.end(), [](const run_of& a, const run_of& b) {
    return a.end - a.begin > b.end - b.begin;
  });
  std::vector<slice_auc> out;
  rest_rows = 0;
  std::vector<float> slice_scores, slice_labels;
  for (size_t r = 0; r < runs.size(); ++r) {
    const auto rows = runs[r].end - runs[r].begin;
    if (r >= top) {
      rest_rows += static_cast<int64_t>(rows);
      continue;
    }
    slice_scores.clear();
    slice_labels.clear();
    slice_auc s;
    s.key = slices[order[runs[r].begin]];
    s.rows = static_cast<int64_t>(rows);
    for (size_t k = runs[r].begin; k < runs[r].end; ++k) {
      slice_scores.push_back(scores[order[k]]);
      slice_labels.push_back(labels[order[k]]);
      s.positives += positive(labels, order[k]);  // names the row's own index
    }
    s.auc = roc_auc(slice_scores.data(), slice_labels.data(), rows);
    out.push_back(s);
  }
  return out;
}

double calibration_from_logits(const float* logits, const float* labels, size_t n) {
  double predicted = 0, observed = 0;
  for (size_t i = 0; i < n; ++i) {
    const double z = logits[i];
    predicted += z >= 0 ? 1 / (1 + std::exp(-z)) : std::exp(z) / (1 + std::exp(z));
    observed += positive(labels, i) ? 1 : 0;
  }
  return observed > 0 ? predicted / observed : not_a_number;
}

double mean_logloss(const float* probabilities, const float* labels, size_t n) {
  if (n == 0) return not_a_number;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const double p = std::clamp(static_cast<double>(probabilities[i]), logloss_clamp,
                                1 - logloss_clamp);  // NaN passes through as NaN
    sum -= positive(labels, i) ? std::log(p) : std::log1p(-p);
  }
  return sum / static_cast<double>(n);
}

double mean_logloss_from_logits(const float* logits, const float* labels, size_t n) {
  if (n == 0) return not_a_number;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const double z = logits[i];
    sum += softplus(positive(labels, i) ? -z : z);
  }
  return sum / static_cast<double>(n);
}

double binary_scores::positive_rate() const {
  if (labels_.empty()) return not_a_number;
  return static_cast<double>(std::count(labels_.begin(), labels_.end(), 1.0f)) /
         static_cast<double>(labels_.size());
}

} // namespace actorps
