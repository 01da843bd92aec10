#include "apps/gen_data/planted_libsvm.hpp"

#include "actors/ps/binary_metrics.hpp"
#include "actors/ps/splitmix64.hpp"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace actorps {

namespace {

constexpr double zipf_exponent = 1.1;
constexpr double weighted_fraction = 0.2;  // of the features, the rest weigh 0
constexpr double logit_sd = 2.0;           // what σ is chosen for
constexpr double bias = -1.0;
constexpr double pi = 3.14159265358979323846;

/// The seed of one of the spec's independent streams.
uint64_t stream_seed(uint64_t seed, uint64_t stream) {
  return splitmix64(seed ^ (stream * 0xd1b54a32d192ed03ull)).next();
}

/// Uniform in (0, 1), never 0 (a log of it stays finite).
double open_unit(splitmix64& random) {
  return (static_cast<double>(random.next() >> 11) + 0.5) * 0x1p-53;
}

/// Popularity rank -> feature index in 1..F: r ↦ (a·(r-1) + c) mod F + 1 with gcd(a, F) = 1,
/// a bijection that scatters the popular ranks over the index space.
class rank_scatter {
public:
  rank_scatter(uint64_t features, uint64_t offset) : f_(features), c_(offset % features) {
    a_ = static_cast<uint64_t>(static_cast<double>(features) * 0.6180339887498949) | 1;
    while (std::gcd(a_, f_) != 1) ++a_;
    a_ %= f_;
  }
  // a_, r < F <= 2^26: the product fits in 64 bits.
  uint64_t index(uint64_t rank) const { return (a_ * (rank - 1) + c_) % f_ + 1; }

private:
  uint64_t f_, a_ = 1, c_;
};

/// Ranks 1..F drawn by inverting the continuous power law's CDF on [1, F+1) and rounding down.
class zipf_ranks {
public:
  explicit zipf_ranks(uint64_t features)
      : f_(features),
        span_(std::pow(static_cast<double>(features) + 1, 1 - zipf_exponent) - 1) {}
  uint64_t draw(splitmix64& random) const {
    const double x = std::pow(1 + open_unit(random) * span_, 1 / (1 - zipf_exponent));
    return std::clamp<uint64_t>(static_cast<uint64_t>(x), 1, f_);
  }

private:
  uint64_t f_;
  double span_;
};

/// A feature carries weight only if it is expected in at least this many training rows: a weight
/// seen a handful of times cannot be learnt by any model, so planting one would put the best
/// AUC out of reach of every learner (the rare features stay in the rows, as noise).
constexpr double min_signal_rows = 300;

/// The probability that one draw of zipf_ranks over F features is rank r.
double rank_probability(uint64_t r, uint64_t features) {
  const double s = 1 - zipf_exponent;  // negative
  const double total = std::pow(static_cast<double>(features) + 1, s) - 1;
  return (std::pow(static_cast<double>(r) + 1, s) - std::pow(static_cast<double>(r), s)) / total;
}

/// The weight of each feature index (entry 0 unused): 0, or N(0, σ²) by Box–Muller for a
/// weighted_fraction of the features common enough to learn (min_signal_rows).
std::vector<float> planted_weights(const planted_libsvm_spec& spec, const rank_scatter& scatter) {
  const auto features = static_cast<uint64_t>(spec.features);
  const double draws = static_cast<double>(spec.rows) * spec.nnz;
  uint64_t head = 0;  // ranks 1..head are common enough; their share of the draws:
  double head_share = 0;
  while (head < features && draws * rank_probability(head + 1, features) >= min_signal_rows)
    head_share += rank_probability(++head, features);
  splitmix64 random(stream_seed(spec.seed, 3));
  const double weighted_per_row = std::max(weighted_fraction * spec.nnz * head_share, 1.0);
  const double sigma = logit_sd / std::sqrt(weighted_per_row);
  std::vector<float> w(static_cast<size_t>(spec.features) + 1, 0.0f);
  for (uint64_t r = 1; r <= head; ++r) {
    const double chosen = open_unit(random), u1 = open_unit(random), u2 = open_unit(random);
    if (chosen < weighted_fraction)
      w[scatter.index(r)] =
        static_cast<float>(sigma * std::sqrt(-2 * std::log(u1)) * std::cos(2 * pi * u2));
  }
  return w;
}

/// A text file written a chunk at a time, plain or gzip.
class text_sink {
public:
  text_sink(const std::string& path, bool gzip) : path_(path) {
    // Level 1: a fifth of the time of gzip's default level 6 for files a quarter larger.
    if (gzip) gz_ = gzopen(path.c_str(), "wb1");
    else plain_ = std::fopen(path.c_str(), "wb");
    if (!gz_ && !plain_) throw std::runtime_error(path + ": cannot be written");
    text_.reserve(chunk_bytes + 4096);
  }
  ~text_sink() {
    if (gz_) gzclose(gz_);
    if (plain_) std::fclose(plain_);
  }
  text_sink(const text_sink&) = delete;
  text_sink& operator=(const text_sink&) = delete;

  std::string& text() { return text_; }
  /// Writes the text when a chunk has gathered (or always, when `all`).
  void flush(bool all = false) {
    if (text_.size() < chunk_bytes && !all) return;
    const bool ok = gz_ ? gzwrite(gz_, text_.data(), static_cast<unsigned>(text_.size())) ==
                              static_cast<int>(text_.size())
                        : std::fwrite(text_.data(), 1, text_.size(), plain_) == text_.size();
    if (!ok) throw std::runtime_error(path_ + ": write failed (disk full?)");
    text_.clear();
  }
  void close() {
    flush(true);
    const bool ok = gz_ ? gzclose(gz_) == Z_OK : std::fclose(plain_) == 0;
    gz_ = nullptr;
    plain_ = nullptr;
    if (!ok) throw std::runtime_error(path_ + ": write failed (disk full?)");
  }

private:
  static constexpr size_t chunk_bytes = size_t{1} << 20;
  std::string path_;
  gzFile gz_ = nullptr;
  std::FILE* plain_ = nullptr;
  std::string text_;
};

void append_number(std::string& text, uint64_t n) {
  char digits[24];
  text.append(digits, std::to_chars(digits, digits + sizeof digits, n).ptr);
}

/// Draws and writes `rows` rows; returns the label of each and its true logit.
struct drawn_rows {
  std::vector<float> labels, logits;
};

drawn_rows write_rows(const planted_libsvm_spec& spec, int64_t rows, uint64_t stream,
                      const std::vector<float>& weights, const rank_scatter& scatter,
                      text_sink& out, std::vector<bool>* seen) {
  splitmix64 random(stream_seed(spec.seed, stream));
  const zipf_ranks ranks(static_cast<uint64_t>(spec.features));
  const auto nnz = static_cast<size_t>(spec.nnz);
  drawn_rows drawn;
  drawn.labels.reserve(static_cast<size_t>(rows));
  drawn.logits.reserve(static_cast<size_t>(rows));
  std::vector<uint64_t> row;
  for (int64_t i = 0; i < rows; ++i) {
    row.clear();
    while (row.size() < nnz) {  // distinct features: draw the missing ones again
      while (row.size() < nnz) row.push_back(scatter.index(ranks.draw(random)));
      std::sort(row.begin(), row.end());
      row.erase(std::unique(row.begin(), row.end()), row.end());
    }
    double z = bias;
    for (uint64_t j : row) z += weights[j];
    const float label = open_unit(random) < 1 / (1 + std::exp(-z)) ? 1.0f : 0.0f;
    drawn.labels.push_back(label);
    drawn.logits.push_back(static_cast<float>(z));
    std::string& text = out.text();
    text += label == 1.0f ? '1' : '0';
    for (uint64_t j : row) {
      text += ' ';
      append_number(text, j);
      text += ":1";
      if (seen) (*seen)[j] = true;
    }
    text += '\n';
    out.flush();
  }
  out.close();
  return drawn;
}

double mean(const std::vector<float>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

void check(const planted_libsvm_spec& spec) {
  const auto fail = [](const std::string& why) { throw std::invalid_argument(why); };
  if (spec.rows < 1) fail("--rows must be at least 1, got " + std::to_string(spec.rows));
  if (spec.test_rows < 1)
    fail("--test-rows must be at least 1, got " + std::to_string(spec.test_rows));
  if (spec.features < 1 || spec.features > max_planted_features)
    fail("--features must be in 1.." + std::to_string(max_planted_features) + ", got " +
         std::to_string(spec.features));
  if (spec.nnz < 1 || spec.nnz > 1000 || int64_t{spec.nnz} * 2 > spec.features)
    fail("--nnz must be in 1..1000 and at most half of --features (rows draw distinct "
         "features), got " + std::to_string(spec.nnz));
}

} // namespace

planted_libsvm_summary write_planted_libsvm(const planted_libsvm_spec& spec,
                                            const std::string& dir) {
  check(spec);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot be created (" + ec.message() + ")");
  planted_libsvm_summary summary;
  const std::string suffix = spec.gzip ? ".libsvm.gz" : ".libsvm";
  summary.train_path = dir + "/train" + suffix;
  summary.test_path = dir + "/test" + suffix;

  const rank_scatter scatter(static_cast<uint64_t>(spec.features), stream_seed(spec.seed, 4));
  const std::vector<float> weights = planted_weights(spec, scatter);
  std::vector<bool> seen(static_cast<size_t>(spec.features) + 1, false);
  text_sink train_file(summary.train_path, spec.gzip);
  const drawn_rows train = write_rows(spec, spec.rows, 1, weights, scatter, train_file, &seen);
  text_sink test_file(summary.test_path, spec.gzip);
  const drawn_rows test =
      write_rows(spec, spec.test_rows, 2, weights, scatter, test_file, nullptr);

  summary.distinct_train_features =
      static_cast<uint64_t>(std::count(seen.begin(), seen.end(), true));
  summary.positive_rate = mean(train.labels);
  summary.test_positive_rate = mean(test.labels);
  summary.best_test_auc = roc_auc(test.logits.data(), test.labels.data(), test.labels.size());
  summary.best_test_logloss =
      mean_logloss_from_logits(test.logits.data(), test.labels.data(), test.labels.size());
  return summary;
}

} // namespace actorps
