// A seeded click-through problem with a known answer, written in Criteo's display-ads format
// (criteo_reader): rows of 13 integer and 26 categorical features whose clicks come from a
// planted model with per-value effects and low-rank field interactions, so a trained CTR
// model's test AUC can be read against the best any model can reach.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace actorps {

/// What to generate. The defaults make a problem whose best test AUC is about 0.8.
struct planted_criteo_spec {
  int64_t rows = 100000;      ///< training rows
  int64_t test_rows = 10000;  ///< test rows, from the same model
  uint64_t seed = 1;
  bool gzip = false;          ///< write train.tsv.gz and test.tsv.gz instead
  int days = 0;               ///< > 0: a stream of this many daily files of `rows` rows each
  double drift = 0;           ///< the share of each field's values replaced from day to day
};

/// What write_planted_criteo wrote, and how well the planted model itself scores.
struct planted_criteo_summary {
  std::string train_path = {}, test_path = {};  ///< days: train_path is the days' directory
  std::vector<std::string> day_paths = {};          ///< days: the daily training files
  std::vector<int64_t> vocabulary = {};             ///< values each of C1..C26 draws from
  std::vector<int64_t> distinct_train_values = {};  ///< of those, in a training row (per field)
  std::vector<std::pair<int, int>> interaction_pairs = {};  ///< fields (0..25) that interact
  double bias = 0;                 ///< the planted logit's bias (sets the click rate)
  double positive_rate = 0;        ///< of the training labels
  double test_positive_rate = 0;
  double best_test_auc = 0;        ///< of the true probabilities against the test labels
  double best_test_logloss = 0;    ///< of the true probabilities, nats per row
  double linear_part_test_auc = 0;  ///< of the true logit without the interaction terms
  int64_t values_per_day = 0;      ///< days: distinct values in a day's rows, the mean over days
  int64_t values_all_days = 0;     ///< days: distinct values in all the training days
};

/// The planted model, in numbers:
/// - Categorical field f (C1..C26) draws values of popularity rank 1..V_f, V_f = min(Criteo's
///   own cardinality of the field (3 for C9 to 10 M for C3), rows / 2, at least 2): from 3 to
///   1 M for 2 M rows. Ranks follow a discretized power law P(r) ∝ ∫_r^{r+1} x^-1.1 dx
///   (Zipf-like, exponent 1.1). Eleven fields miss a value in 3.4 %, 44 % or 76 % of the rows,
///   as in Criteo. A value is written as 8 lower-case hex digits, a bijection of (field, rank).
/// - Integer field j (I1..I13) is missing in Criteo's share of rows (0 to 76 %), else
///   floor(s_j·(U^(-1/1.1) - 1)) for a uniform U (Pareto-like, median near Criteo's); I2 is
///   also -1, -2 or -3 in 5 % of the rows, as Criteo's.
/// - logit = b + k_lin·Σ_f w_f[v_f] + k_int·Σ_{(f,g) in 8 pairs} <u_f[v_f], u_g[v_g]>
///           + k_dense·Σ_j a_j·log(1 + max(I_j, 0)),
///   with w, the rank-4 vectors u and a_j standard normals derived by hashing (seed, field,
///   rank): no tables, memory independent of V. Only a value expected in at least 300
///   training rows (missing counted as a value) has a nonzero w, and only one expected in at
///   least 3 000 a nonzero u: one seen a handful of times cannot be learnt by any model, and a
///   vector that shows only through the partner field's values in the same rows takes about
///   ten times the rows of a weight, so planting effects on them would put the printed best AUC
///   out of every learner's reach (with u from 300 rows on, DLRM stopped 0.018 short of it in
///   one epoch of 2 M rows; from 3 000, 0.0115). The 8 interacting field pairs are drawn from
///   seed.
/// - k_lin, k_int and k_dense give the three parts variances 1.1, 0.6 and 0.3 (a logit of
///   standard deviation 1.4: best test AUC near 0.81, 0.76 without the interactions) and b
///   gives a click rate of 25 %, all measured on a calibration sample of 20 000 rows from its
///   own stream; label ~ Bernoulli(sigmoid(logit)).
/// Train, test, calibration and effects draw from separate splitmix64 streams of `seed`: the
/// same spec writes the same bytes (on the same C library, whose pow, log and exp the draws use).
///
/// A stream (spec.days > 0) draws every day from the same model, but a value is the pair of its
/// rank and its era: rank r of field f is a new value (new code, new effects) whenever
/// floor(day·drift + o) steps, o = frac(r·φ + f·0.37) spread evenly over the ranks, so from each
/// day to the next a share `drift` of each field's values retires and as many new ones arrive
/// with the popularity of those they replace (each day calibrated as above, for its values).
/// Day d (1..days) goes to DIR/train/day-<d>.tsv
/// (zero-padded), the next day to DIR/test.tsv: the best test AUC is that day's.
///
/// Writes DIR/train.tsv and DIR/test.tsv (".gz" appended when spec.gzip), creating DIR if
/// needed and replacing the files. Throws std::invalid_argument for a spec out of range (naming
/// the flag: --rows, --test-rows) and std::runtime_error naming a file that cannot be written.
planted_criteo_summary write_planted_criteo(const planted_criteo_spec& spec,
                                            const std::string& dir);

} // namespace actorps
