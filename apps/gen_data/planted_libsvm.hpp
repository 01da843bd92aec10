// A seeded sparse binary problem with a known answer, written as libsvm files: rows of hashed
// features whose labels come from a planted logistic model, so a trained model's test AUC can
// be read against the best any model can reach.
#pragma once

#include <cstdint>
#include <string>

namespace actorps {

/// What to generate. The defaults make a problem whose best test AUC is about 0.81 (seed 1).
struct planted_libsvm_spec {
  int64_t rows = 100000;       ///< training rows
  int64_t test_rows = 10000;   ///< test rows, from the same model
  int64_t features = 1000000;  ///< feature indices 1..features
  int nnz = 20;                ///< distinct active features per row, each with value 1
  uint64_t seed = 1;
  bool gzip = false;           ///< write train.libsvm.gz and test.libsvm.gz instead
};

/// The largest `features` accepted: the planted weights are a table of that many floats.
inline constexpr int64_t max_planted_features = int64_t{1} << 26;

/// What write_planted_libsvm wrote, and how well the planted model itself scores.
struct planted_libsvm_summary {
  std::string train_path, test_path;
  uint64_t distinct_train_features = 0;  ///< features in at least one training row
  double positive_rate = 0;               ///< of the training labels
  double test_positive_rate = 0;
  double best_test_auc = 0;      ///< of the true probabilities against the test labels
  double best_test_logloss = 0;  ///< of the true probabilities, nats per row
};

/// The planted model, in numbers:
/// - Features by popularity: a feature's rank r in 1..F is drawn from a discretized power law,
///   P(r) ∝ ∫_r^{r+1} x^-1.1 dx (Zipf-like, exponent 1.1), so a few features are in most rows
///   and most are rare. Ranks are scattered over the indices by a fixed affine permutation of
///   1..F, as hashed features are: the popular ones are not all small indices.
/// - Weights: a feature expected in at least 300 training rows (rows · nnz · P(r) ≥ 300: the
///   popular head of the ranks) has a nonzero weight with probability 0.2, drawn from N(0, σ²)
///   with σ = 2 / sqrt(0.2 · nnz · P(head)), so that the logit w·x + b has a standard deviation
///   near 2; the bias b is -1. The rare features carry no weight: any model could learn them
///   only from a handful of rows, so weighting them would put the printed best AUC out of any
///   learner's reach (1 M rows, F = 1.5 M: the 3 847 most popular ranks, 74 % of the draws).
/// - Rows: nnz distinct features with value 1; label ~ Bernoulli(sigmoid(w·x + b)). The few
///   most popular features are in nearly every row, so their weights shift the positive rate
///   with the seed and F (0.26 to 0.41 seen for 1 M rows).
/// How many features a training set touches (1 M rows, nnz 20, seed 1): F = 1 M: 0.80 M;
/// F = 2 M: 1.17 M; F = 4 M: 1.56 M (100 000 rows over F = 1 M: 0.25 M).
/// Train, test and weights draw from separate splitmix64 streams of `seed`: the same spec
/// writes the same bytes (on the same C library, whose pow and log the draws use).
///
/// Writes DIR/train.libsvm and DIR/test.libsvm (".gz" appended when spec.gzip), creating DIR
/// if needed and replacing the files. Throws std::invalid_argument for a spec out of range
/// (naming the flag: --rows, --test-rows, --features, --nnz) and std::runtime_error naming
/// the file that cannot be written.
planted_libsvm_summary write_planted_libsvm(const planted_libsvm_spec& spec,
                                            const std::string& dir);

} // namespace actorps
