// A seeded log of one's own (not Criteo's layout) with a known answer: numeric, categorical,
// multi-hot and weight columns, described by a feature schema (actors/data/SCHEMA_FORMAT.md)
// written beside it, whose clicks come from a planted model, so that the CTR models trained on
// it through the schema can be read against the best any model can reach.
#pragma once

#include <cstdint>
#include <string>

namespace actorps {

/// What to generate.
struct planted_ctr_log_spec {
  int64_t rows = 100000;      ///< training rows
  int64_t test_rows = 20000;  ///< test rows, from the same model
  uint64_t seed = 1;
};

/// What write_planted_ctr_log wrote, and how well the planted model itself scores.
struct planted_ctr_log_summary {
  std::string train_path = {}, test_path = {}, schema_path = {};
  double positive_rate = 0;       ///< of the training labels
  double test_positive_rate = 0;
  double best_test_auc = 0;       ///< of the true logits against the test labels (unweighted)
  double best_test_gauc = 0;      ///< the same, averaged per user (group_auc)
  double best_test_logloss = 0;   ///< of the true probabilities, nats per row
};

/// The log, TAB-separated, one row a line, columns in this order (schema.json names them):
///   click    label, ~ Bernoulli(sigmoid(logit))
///   weight   weight, 0.5, 1, 1.5 or 2 (drawn apart from everything else: the best model is
///            the same weighted or not)
///   price    numeric, normal (mean 20, std 5), standardised by the schema
///   visits   numeric, a geometric count, log1p; empty (missing) in 10 % of the rows
///   age      numeric, 16..75, bucketized at 25, 35, 50, 65 (a key field)
///   user     categorical, 200 users (the GAUC group), uniform
///   item     categorical, 300 items, Zipf-like; empty in 5 % of the rows
///   history  multi-hot, 0..8 of 400 items joined by '|' (an empty bag in a ninth of the rows),
///            pooled by the mean
///   tags     multi-hot, 1..4 of 40 tags joined by '|', pooled by the sum
/// logit = b + 0.3·price_std + 0.25·log1p(visits) + w_age[bucket] + w_user[u] + w_item[i]
///         + mean_{k in history} h[k] + Σ_{k in tags} t[k], every effect a seeded normal
///         (scales 0.4 age, 0.5 user, 0.6 item and a missing item, 1.2 history, 0.3 tags) and
///         b setting a click rate near 30 %: a model that pools each bag as the schema says
///         (the wide part of lr, wdl and deepfm exactly) can reach the best AUC.
/// Writes DIR/train.tsv, DIR/test.tsv and DIR/schema.json, creating DIR if needed. Throws
/// std::invalid_argument naming the flag (--rows, --test-rows) for a spec out of range and
/// std::runtime_error naming a file that cannot be written. The same spec writes the same bytes.
planted_ctr_log_summary write_planted_ctr_log(const planted_ctr_log_spec& spec,
                                              const std::string& dir);

} // namespace actorps
