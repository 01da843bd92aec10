#include "kernels/binary_metrics.hpp"

#include "actors/ps/splitmix64.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

using namespace actorps;

namespace {

double auc(const std::vector<float>& scores, const std::vector<float>& labels) {
  REQUIRE(scores.size() == labels.size());
  return roc_auc(scores.data(), labels.data(), scores.size());
}

/// AUC by its definition: over every (positive, negative) pair, 1 when the positive scores
/// higher, 1/2 for a tie.
double auc_by_pairs(const std::vector<float>& scores, const std::vector<float>& labels) {
  double wins = 0, pairs = 0;
  for (size_t i = 0; i < scores.size(); ++i)
    for (size_t j = 0; j < scores.size(); ++j)
      if (labels[i] == 1 && labels[j] == 0) {
        pairs += 1;
        wins += scores[i] > scores[j] ? 1 : scores[i] == scores[j] ? 0.5 : 0;
      }
  return wins / pairs;
}

} // namespace

TEST_CASE("roc_auc on hand cases, ties counting one half") {
  CHECK(auc({0.1f, 0.4f, 0.35f, 0.8f}, {0, 0, 1, 1}) == 0.75);  // scikit-learn's example
  CHECK(auc({0.1f, 0.2f, 0.3f, 0.4f}, {0, 0, 1, 1}) == 1.0);
  CHECK(auc({0.1f, 0.2f, 0.3f, 0.4f}, {1, 1, 0, 0}) == 0.0);
  CHECK(auc({0.5f, 0.5f, 0.5f, 0.5f}, {0, 1, 0, 1}) == 0.5);   // all equal
  CHECK(auc({7, 7, 7, 7, 7}, {1, 0, 0, 0, 0}) == 0.5);
  CHECK(auc({1, 2, 2, 3}, {0, 0, 1, 1}) == 0.875);              // (1 + 1/2 + 2) / 4
  CHECK(auc({-3, 10, 0, 0, 0}, {0, 1, 1, 0, 0}) == 2.5 / 3);    // logits work as well
}

TEST_CASE("roc_auc agrees with the pairwise definition on 300 random rows with many ties") {
  splitmix64 random(11);
  std::vector<float> scores, labels;
  for (int i = 0; i < 300; ++i) {
    scores.push_back(static_cast<float>(random.next() % 20));  // 20 values: ties everywhere
    labels.push_back(random.next_unit() < 0.3 + 0.02 * scores.back() ? 1.0f : 0.0f);
  }
  const double expected = auc_by_pairs(scores, labels);
  CHECK(expected > 0.6);
  CHECK(auc(scores, labels) == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("roc_auc is NaN without both classes or with a NaN score, and refuses other labels") {
  CHECK(std::isnan(auc({0.1f, 0.9f}, {1, 1})));
  CHECK(std::isnan(auc({0.1f, 0.9f}, {0, 0})));
  CHECK(std::isnan(auc({}, {})));
  CHECK(std::isnan(auc({0.1f, std::nanf("")}, {0, 1})));
  CHECK_THROWS_WITH_AS(auc({0.1f, 0.9f, 0.5f}, {0, 1, -1}), "label -1 at index 2 is not 0 or 1",
                       std::invalid_argument);
}

TEST_CASE("mean_logloss averages the log loss with probabilities clamped to [1e-7, 1 - 1e-7]") {
  const std::vector<float> p = {0.9f, 0.2f}, y = {1, 0};
  CHECK(mean_logloss(p.data(), y.data(), 2) ==
        doctest::Approx((-std::log(double(0.9f)) - std::log(1 - double(0.2f))) / 2));
  const std::vector<float> sure = {0.0f, 1.0f, 1.0f}, sure_y = {1, 1, 0};
  CHECK(mean_logloss(sure.data(), sure_y.data(), 3) ==
        doctest::Approx((-std::log(1e-7) - std::log1p(-1e-7) - std::log(1e-7)) / 3));
  CHECK(-std::log(logloss_clamp) == doctest::Approx(16.118).epsilon(1e-4));
  CHECK(std::isnan(mean_logloss(p.data(), y.data(), 0)));
  const std::vector<float> nan = {std::nanf("")};
  CHECK(std::isnan(mean_logloss(nan.data(), y.data(), 1)));
  const std::vector<float> bad_y = {1, 2};
  CHECK_THROWS_AS(mean_logloss(p.data(), bad_y.data(), 2), std::invalid_argument);
}

TEST_CASE("mean_logloss_from_logits matches the probability form and stays exact far out") {
  const std::vector<float> z = {-2.0f, 0.0f, 0.5f, 3.0f}, y = {0, 1, 0, 1};
  std::vector<float> p;
  for (float v : z) p.push_back(static_cast<float>(1 / (1 + std::exp(-double(v)))));
  CHECK(mean_logloss_from_logits(z.data(), y.data(), 4) ==
        doctest::Approx(mean_logloss(p.data(), y.data(), 4)).epsilon(1e-6));
  const std::vector<float> far = {100.0f, -100.0f, 40.0f}, far_y = {0, 1, 1};
  CHECK(mean_logloss_from_logits(far.data(), far_y.data(), 3) ==
        doctest::Approx((100 + 100 + std::exp(-40.0)) / 3).epsilon(1e-12));
  CHECK(mean_logloss_from_logits(z.data(), y.data(), 1) ==
        doctest::Approx(std::log1p(std::exp(-2.0))));
}

TEST_CASE("binary_scores collects batches and scores them as one") {
  binary_scores scores;
  CHECK(std::isnan(scores.positive_rate()));
  const std::vector<float> p1 = {0.1f, 0.4f}, y1 = {0, 0}, p2 = {0.35f, 0.8f}, y2 = {1, 1};
  scores.add(p1.data(), y1.data(), 2);
  scores.add(p2.data(), y2.data(), 2);
  CHECK(scores.size() == 4);
  CHECK(scores.auc() == 0.75);
  CHECK(scores.positive_rate() == 0.5);
  const std::vector<float> p = {0.1f, 0.4f, 0.35f, 0.8f}, y = {0, 0, 1, 1};
  CHECK(scores.logloss() == mean_logloss(p.data(), y.data(), 4));
  scores.add(0.5f, 1.0f);
  CHECK(scores.size() == 5);
  scores.clear();
  CHECK(scores.size() == 0);
}

TEST_CASE("group_auc is the rows-weighted mean of each group's pairwise AUC, brute force") {
  // Hand case: group 7 (rows 0-3) AUC 0.75, group 9 (rows 4-6) AUC 1 with 3 rows, group 3 only
  // clicks (left out): (4·0.75 + 3·1) / 7.
  const std::vector<float> s = {0.1f, 0.4f, 0.35f, 0.8f, 0.2f, 0.9f, 0.7f, 0.5f, 0.6f},
                           y = {0, 0, 1, 1, 0, 1, 1, 1, 1};
  const std::vector<uint64_t> g = {7, 7, 7, 7, 9, 9, 9, 3, 3};
  CHECK(group_auc(s.data(), y.data(), g.data(), s.size()) == doctest::Approx(6.0 / 7));

  // 2000 random rows in 60 groups of uneven sizes, scores with ties: against the definition,
  // group by group, pair by pair.
  splitmix64 random(5);
  std::vector<float> scores, labels;
  std::vector<uint64_t> groups;
  for (int i = 0; i < 2000; ++i) {
    const uint64_t group = (random.next() % 60) * (random.next() % 3 + 1);  // sizes vary
    groups.push_back(group * 0x9e3779b97f4a7c15ULL);  // keys, not small integers
    scores.push_back(static_cast<float>(random.next() % 12));
    labels.push_back(random.next_unit() < 0.15 + 0.04 * scores.back() + 0.002 * double(group)
                       ? 1.0f : 0.0f);
  }
  double weighted = 0, rows = 0;
  int counted = 0, left_out = 0;
  std::vector<uint64_t> seen;
  for (uint64_t key : groups) {
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    std::vector<float> gs, gy;
    for (size_t i = 0; i < groups.size(); ++i)
      if (groups[i] == key) gs.push_back(scores[i]), gy.push_back(labels[i]);
    const bool both = std::count(gy.begin(), gy.end(), 1.0f) > 0
                      && std::count(gy.begin(), gy.end(), 0.0f) > 0;
    if (!both) {
      ++left_out;
      continue;
    }
    ++counted;
    weighted += auc_by_pairs(gs, gy) * double(gs.size());
    rows += double(gs.size());
  }
  REQUIRE(counted > 20);
  const double expected = weighted / rows;
  CAPTURE(left_out);
  CHECK(group_auc(scores.data(), labels.data(), groups.data(), scores.size())
        == doctest::Approx(expected).epsilon(1e-12));
  // Not the pooled AUC: the groups' own click rates make them differ.
  CHECK(std::fabs(expected - auc(scores, labels)) > 1e-3);

  CHECK(std::isnan(group_auc(s.data() + 7, y.data() + 7, g.data() + 7, 2)));  // one class only
  const std::vector<float> nan = {std::nanf(""), 0.5f};
  CHECK(std::isnan(group_auc(nan.data(), y.data() + 4, g.data() + 4, 2)));
  const std::vector<float> bad = {0, 2};
  CHECK_THROWS_WITH_AS(group_auc(s.data(), bad.data(), g.data(), 2),
                       "label 2 at index 1 is not 0 or 1", std::invalid_argument);
}

TEST_CASE("calibration_from_logits is the mean probability over the click rate") {
  const std::vector<float> z = {0.0f, 0.0f, 0.0f, 0.0f}, y = {1, 0, 0, 0};
  CHECK(calibration_from_logits(z.data(), y.data(), 4) == doctest::Approx(2.0));  // 0.5 / 0.25
  const std::vector<float> far = {-200.0f, 200.0f, std::log(3.0f)}, far_y = {0, 1, 1};
  CHECK(calibration_from_logits(far.data(), far_y.data(), 3)
        == doctest::Approx((0 + 1 + 0.75) / 2).epsilon(1e-6));
  CHECK(std::isnan(calibration_from_logits(z.data(), z.data(), 4)));  // no click at all
}
