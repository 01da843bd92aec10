#include "apps/gen_data/planted_criteo.hpp"

#include "actors/ps/criteo_keys.hpp"
#include "actors/ps/binary_metrics.hpp"
#include "actors/ps/splitmix64.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <unordered_set>
#include <vector>

namespace actorps {

namespace {

constexpr int fields = criteo_categorical_fields;
constexpr int integers = criteo_dense_fields;
constexpr double zipf_exponent = 1.1;
constexpr double min_signal_rows = 300;  // see planted_criteo.hpp: rarer values have no effect
// A value's interaction vector u (rank 4) shows only through its partner field's values in
// the same rows, most of which carry little: it takes ten times the rows of a weight to learn.
constexpr double min_interaction_rows = 3000;
constexpr int embedding_rank = 4;        // of the interaction vectors u
constexpr int pair_count = 8;
constexpr double linear_variance = 1.1, interaction_variance = 0.6, dense_variance = 0.3;
constexpr double click_rate = 0.25;
constexpr int64_t calibration_rows = 20000;
constexpr double pi = 3.14159265358979323846;

// Criteo's display-ads challenge (Kaggle, 45 M rows): the distinct values of C1..C26, and the
// share of rows missing each categorical and each integer field.
constexpr std::array<int64_t, fields> criteo_cardinality = {
    1460, 583,   10131227, 2202608, 305, 24, 12517, 633, 3,      93145, 5683, 8351593, 3194,
    27,   14992, 5461306,  10,      5652, 2173, 4,   7046547, 18, 15, 286181, 105, 142572};
constexpr std::array<double, fields> categorical_missing = {
    0, 0, .034, .034, 0, 0, 0, 0, 0, 0, 0, .034, 0, 0, 0, .034, 0, 0, .44, .44, .034, .76, 0,
    .034, .44, .44};
constexpr std::array<double, integers> integer_missing = {.45, 0,    .21, .22,  .026, .22, .043,
                                                          .0005, .043, .45, .043, .76,  .22};
// s_j of floor(s_j·(U^(-1/1.1) - 1)), whose median is floor(0.88·s_j): near Criteo's medians.
constexpr std::array<double, integers> integer_scale = {1.2, 3.5, 8,   6,   2800, 45, 3.5,
                                                        9,   45,  0.8, 1.2, 0.8,  5};
constexpr double negative_i2 = 0.05;  // I2 is -1, -2 or -3 this often, as Criteo's

/// The seed of one of the spec's independent streams.
uint64_t stream_seed(uint64_t seed, uint64_t stream) {
  return splitmix64(seed ^ (stream * 0xd1b54a32d192ed03ull)).next();
}

/// Uniform in (0, 1), never 0 (a log of it stays finite).
double open_unit(splitmix64& random) {
  return (static_cast<double>(random.next() >> 11) + 0.5) * 0x1p-53;
}

/// Two independent standard normals (Box–Muller).
std::pair<double, double> normal_pair(splitmix64& random) {
  const double radius = std::sqrt(-2 * std::log(open_unit(random)));
  const double angle = 2 * pi * open_unit(random);
  return {radius * std::cos(angle), radius * std::sin(angle)};
}

/// How field f draws its values: ranks 1..vocabulary by inverting the continuous power law's
/// CDF on [1, V+1) and rounding down; rank 0 is a missing value.
struct field_law {
  int64_t vocabulary = 2;
  double span = 0;        ///< (V+1)^(1-s) - 1
  double missing = 0;     ///< share of rows without a value
  int64_t head = 0;       ///< ranks 1..head have an effect
  int64_t interaction_head = 0;  ///< ranks 1..interaction_head have a vector u
  bool missing_effect = false;
  bool missing_interaction = false;
  bool interacts = false;  ///< in one of the interaction pairs: has a vector u

  field_law(int64_t v, double missing_share, int64_t rows)
      : vocabulary(v),
        span(std::pow(static_cast<double>(v) + 1, 1 - zipf_exponent) - 1),
        missing(missing_share) {
    const double present_rows = static_cast<double>(rows) * (1 - missing);
    while (head < vocabulary && present_rows * probability(head + 1) >= min_signal_rows) ++head;
    while (interaction_head < head
           && present_rows * probability(interaction_head + 1) >= min_interaction_rows)
      ++interaction_head;
    missing_effect = static_cast<double>(rows) * missing >= min_signal_rows;
    missing_interaction = static_cast<double>(rows) * missing >= min_interaction_rows;
  }

  /// P(rank r) among the present values.
  double probability(int64_t r) const {
    const double s = 1 - zipf_exponent;
    return (std::pow(static_cast<double>(r) + 1, s) - std::pow(static_cast<double>(r), s)) /
           span;
  }

  uint32_t draw(splitmix64& random) const {
    if (missing > 0 && open_unit(random) < missing) return 0;
    const double x = std::pow(1 + open_unit(random) * span, 1 / (1 - zipf_exponent));
    return static_cast<uint32_t>(std::clamp<int64_t>(static_cast<int64_t>(x), 1, vocabulary));
  }

  bool has_effect(uint32_t rank) const { return rank == 0 ? missing_effect : rank <= head; }
  bool has_interaction(uint32_t rank) const {
    return rank == 0 ? missing_interaction : rank <= interaction_head;
  }
};

/// The effect of one value: its weight w and, for an interacting field, its vector u.
struct value_effect {
  double w = 0;
  std::array<double, embedding_rank> u = {};
};

struct planted_model {
  std::vector<field_law> laws;
  std::vector<std::pair<int, int>> pairs;
  std::array<double, integers> a = {};
  uint64_t effects_seed = 0;
  double k_linear = 1, k_interaction = 1, k_dense = 1, bias = 0;
  double drift = 0;  ///< a stream's share of values replaced per day
  int day = 0;       ///< the day being drawn (0 without a stream)

  /// Which value rank `rank` of field f is on the current day: 0 without drift; the missing
  /// value (rank 0) never changes.
  uint32_t era(int f, uint32_t rank) const {
    if (drift <= 0 || rank == 0) return 0;
    const double offset = std::fmod(rank * 0.6180339887498949 + f * 0.37, 1.0);
    return static_cast<uint32_t>(std::floor(day * drift + offset));
  }

  /// Derived from (seed, field, rank, era) alone: the same value has the same effect in every
  /// row.
  value_effect effect(int f, uint32_t rank) const {
    value_effect e;
    if (!laws[static_cast<size_t>(f)].has_effect(rank)) return e;
    splitmix64 random(splitmix64_mix(effects_seed ^ (static_cast<uint64_t>(f) << 40) ^ rank
                                     ^ (static_cast<uint64_t>(era(f, rank)) << 48)));
    const auto [w, u0] = normal_pair(random);
    e.w = w;
    const auto& law = laws[static_cast<size_t>(f)];
    if (!law.interacts || !law.has_interaction(rank)) return e;
    const auto [u1, u2] = normal_pair(random);
    const auto [u3, unused] = normal_pair(random);
    e.u = {u0, u1, u2, u3};
    return e;
  }
};

/// One drawn row: a rank per categorical field (0: missing), a value per integer field.
struct drawn_row {
  std::array<uint32_t, fields> rank = {};
  std::array<int64_t, integers> integer = {};
  std::array<bool, integers> has_integer = {};
};

void draw_row(const planted_model& m, splitmix64& random, drawn_row& row) {
  for (int f = 0; f < fields; ++f) row.rank[f] = m.laws[static_cast<size_t>(f)].draw(random);
  for (int j = 0; j < integers; ++j) {
    row.has_integer[j] = open_unit(random) >= integer_missing[j];
    if (!row.has_integer[j]) continue;
    if (j == 1 && open_unit(random) < negative_i2) {
      row.integer[j] = -1 - static_cast<int64_t>(random.next() % 3);
      continue;
    }
    const double pareto = std::pow(open_unit(random), -1 / zipf_exponent) - 1;
    row.integer[j] = static_cast<int64_t>(std::min(integer_scale[j] * pareto, 0x1p40));
  }
}

/// The three parts of a row's logit before scaling.
struct logit_parts {
  double linear = 0, interaction = 0, dense = 0;
};

logit_parts parts_of(const planted_model& m, const drawn_row& row) {
  std::array<value_effect, fields> effects;
  logit_parts p;
  for (int f = 0; f < fields; ++f) {
    effects[f] = m.effect(f, row.rank[f]);
    p.linear += effects[f].w;
  }
  for (const auto& [f, g] : m.pairs)
    for (int k = 0; k < embedding_rank; ++k) p.interaction += effects[f].u[k] * effects[g].u[k];
  for (int j = 0; j < integers; ++j)
    if (row.has_integer[j]) p.dense += m.a[j] * criteo_dense_value(row.integer[j]);
  return p;
}

double linear_logit(const planted_model& m, const logit_parts& p) {
  return m.bias + m.k_linear * p.linear + m.k_dense * p.dense;
}

double logit(const planted_model& m, const logit_parts& p) {
  return linear_logit(m, p) + m.k_interaction * p.interaction;
}

double sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

/// Scales the parts to their variances and sets the bias for the click rate, on a sample.
void calibrate(planted_model& m, uint64_t seed) {
  splitmix64 random(stream_seed(seed, 3));
  std::vector<logit_parts> sample(static_cast<size_t>(calibration_rows));
  drawn_row row;
  for (auto& p : sample) {
    draw_row(m, random, row);
    p = parts_of(m, row);
  }
  const auto scale = [&](double logit_parts::*part, double variance) {
    double sum = 0, squares = 0;
    for (const auto& p : sample) {
      sum += p.*part;
      squares += p.*part * (p.*part);
    }
    const double n = static_cast<double>(sample.size()), mean = sum / n;
    const double sample_variance = squares / n - mean * mean;
    return sample_variance > 1e-12 ? std::sqrt(variance / sample_variance) : 0.0;
  };
  m.k_linear = scale(&logit_parts::linear, linear_variance);
  m.k_interaction = scale(&logit_parts::interaction, interaction_variance);
  m.k_dense = scale(&logit_parts::dense, dense_variance);
  double low = -40, high = 40;  // the mean click probability rises with the bias
  for (int i = 0; i < 100; ++i) {
    m.bias = (low + high) / 2;
    double clicks = 0;
    for (const auto& p : sample) clicks += sigmoid(logit(m, p));
    (clicks / static_cast<double>(sample.size()) < click_rate ? low : high) = m.bias;
  }
}

planted_model make_model(const planted_criteo_spec& spec) {
  planted_model m;
  for (int f = 0; f < fields; ++f) {
    const int64_t v = std::max<int64_t>(2, std::min(criteo_cardinality[f], spec.rows / 2));
    m.laws.emplace_back(v, categorical_missing[f], spec.rows);
  }
  splitmix64 random(stream_seed(spec.seed, 5));
  while (static_cast<int>(m.pairs.size()) < pair_count) {
    int f = static_cast<int>(random.next() % fields), g = static_cast<int>(random.next() % fields);
    if (f > g) std::swap(f, g);
    if (f == g || std::count(m.pairs.begin(), m.pairs.end(), std::pair{f, g})) continue;
    m.pairs.emplace_back(f, g);
    m.laws[static_cast<size_t>(f)].interacts = m.laws[static_cast<size_t>(g)].interacts = true;
  }
  std::sort(m.pairs.begin(), m.pairs.end());
  splitmix64 coefficients(stream_seed(spec.seed, 6));
  for (auto& a : m.a) a = normal_pair(coefficients).first;
  m.effects_seed = stream_seed(spec.seed, 4);
  calibrate(m, spec.seed);
  return m;
}

/// The 32-bit code of (field, rank), a bijection of rank within a field, so that no two values
/// of a field are written alike: an add, then the "lowbias32" integer hash (each step invertible).
uint32_t value_code(int f, uint32_t rank) {
  uint32_t x = rank + static_cast<uint32_t>(f) * 0x9e3779b9u;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/// A text file written a chunk at a time through zlib: gzip level 1 ("wb1": a fifth of the time
/// of the default level for files a quarter larger) or plain ("wbT", zlib's transparent mode).
class text_file {
public:
  text_file(const std::string& path, bool gzip)
      : path_(path), file_(gzopen(path.c_str(), gzip ? "wb1" : "wbT")) {
    if (!file_) throw std::runtime_error(path + ": cannot be written");
    gzbuffer(file_, 1 << 20);
    text_.reserve(chunk_bytes + 4096);
  }
  ~text_file() {
    if (file_) gzclose(file_);
  }
  text_file(const text_file&) = delete;
  text_file& operator=(const text_file&) = delete;

  std::string& text() { return text_; }

  /// Writes the text once a chunk has gathered (or always, when `all`).
  void flush(bool all = false) {
    if (text_.size() < chunk_bytes && !all) return;
    if (!text_.empty() && gzwrite(file_, text_.data(), static_cast<unsigned>(text_.size())) !=
                              static_cast<int>(text_.size()))
      throw std::runtime_error(path_ + ": write failed (disk full?)");
    text_.clear();
  }

  void close() {
    flush(true);
    const int status = gzclose(file_);
    file_ = nullptr;
    if (status != Z_OK) throw std::runtime_error(path_ + ": write failed (disk full?)");
  }

private:
  static constexpr size_t chunk_bytes = size_t{1} << 20;
  std::string path_;
  gzFile file_;
  std::string text_;
};

/// The code field f's rank is written as on the model's current day: ranks of a later era are
/// codes of their own (rank + era·(V+1): distinct for every (rank, era) a field meets).
uint32_t written_code(const planted_model& m, int f, uint32_t rank) {
  const auto v = static_cast<uint32_t>(m.laws[static_cast<size_t>(f)].vocabulary);
  return value_code(f, rank + m.era(f, rank) * (v + 1));
}

void append_row(std::string& text, const planted_model& m, const drawn_row& row, bool click) {
  static constexpr char hex[] = "0123456789abcdef";
  text += click ? '1' : '0';
  char digits[24];
  for (int j = 0; j < integers; ++j) {
    text += '\t';
    if (row.has_integer[j])
      text.append(digits, std::to_chars(digits, digits + sizeof digits, row.integer[j]).ptr);
  }
  for (int f = 0; f < fields; ++f) {
    text += '\t';
    if (row.rank[f] == 0) continue;
    const uint32_t code = written_code(m, f, row.rank[f]);
    for (int shift = 28; shift >= 0; shift -= 4) text += hex[(code >> shift) & 15];
  }
  text += '\n';
}

/// The labels and true logits of the rows written, for the summary.
struct written_rows {
  int64_t clicks = 0;
  std::vector<float> labels = {}, logits = {}, linear_logits = {};  ///< kept only when asked
};

written_rows write_rows(const planted_model& m, uint64_t seed, uint64_t stream, int64_t rows,
                        const std::string& path, bool gzip, bool keep,
                        std::vector<std::vector<bool>>* seen,
                        std::vector<std::unordered_set<uint64_t>>* values = nullptr) {
  text_file out(path, gzip);
  splitmix64 random(stream_seed(seed, stream));
  written_rows w;
  drawn_row row;
  for (int64_t i = 0; i < rows; ++i) {
    draw_row(m, random, row);
    const logit_parts parts = parts_of(m, row);
    const double z = logit(m, parts);
    const bool click = open_unit(random) < sigmoid(z);
    w.clicks += click;
    if (keep) {
      w.labels.push_back(click ? 1.0f : 0.0f);
      w.logits.push_back(static_cast<float>(z));
      w.linear_logits.push_back(static_cast<float>(linear_logit(m, parts)));
    }
    if (seen)
      for (int f = 0; f < fields; ++f) (*seen)[static_cast<size_t>(f)][row.rank[f]] = true;
    if (values)
      for (int f = 0; f < fields; ++f)
        if (row.rank[f] != 0)
          for (auto& set : *values)
            set.insert(uint64_t(f) << 32 | written_code(m, f, row.rank[f]));
    append_row(out.text(), m, row, click);
    out.flush();
  }
  out.close();
  return w;
}

void check(const planted_criteo_spec& spec) {
  const auto fail = [](const std::string& why) { throw std::invalid_argument(why); };
  if (spec.rows < 1) fail("--rows must be at least 1, got " + std::to_string(spec.rows));
  if (spec.test_rows < 1)
    fail("--test-rows must be at least 1, got " + std::to_string(spec.test_rows));
  if (spec.days < 0 || spec.days > 10000)
    fail("--days must be 0 to 10000, got " + std::to_string(spec.days));
  if (!(spec.drift >= 0 && spec.drift <= 1))
    fail("--drift must be 0 to 1, got " + std::to_string(spec.drift));
  if (spec.drift > 0 && spec.days == 0) fail("--drift needs --days");
}

/// Days 1..spec.days into DIR/train/, the next one into the test file.
void write_days(planted_model& m, const planted_criteo_spec& spec, const std::string& dir,
                const std::string& suffix, planted_criteo_summary& summary, written_rows& train,
                written_rows& test) {
  summary.train_path = dir + "/train";
  std::error_code ec;
  std::filesystem::create_directories(summary.train_path, ec);
  if (ec) throw std::runtime_error(summary.train_path + ": cannot be created (" + ec.message() + ")");
  const int width = static_cast<int>(std::to_string(spec.days + 1).size());
  std::vector<std::unordered_set<uint64_t>> values(2);  // all days, this day
  int64_t per_day = 0;
  for (int d = 1; d <= spec.days; ++d) {
    std::string number = std::to_string(d);
    number.insert(0, static_cast<size_t>(width) - number.size(), '0');
    summary.day_paths.push_back(summary.train_path + "/day-" + number + suffix);
    m.day = d;
    calibrate(m, spec.seed);  // new values bring new effects: the click rate stays 25 %
    values[1].clear();
    const auto day = write_rows(m, spec.seed, 16 + static_cast<uint64_t>(d), spec.rows,
                                summary.day_paths.back(), spec.gzip, false, nullptr, &values);
    train.clicks += day.clicks;
    per_day += static_cast<int64_t>(values[1].size());
  }
  summary.values_per_day = per_day / spec.days;
  summary.values_all_days = static_cast<int64_t>(values[0].size());
  m.day = spec.days + 1;
  calibrate(m, spec.seed);
  test = write_rows(m, spec.seed, 16 + static_cast<uint64_t>(spec.days) + 1, spec.test_rows,
                    summary.test_path, spec.gzip, true, nullptr);
}

} // namespace

planted_criteo_summary write_planted_criteo(const planted_criteo_spec& spec,
                                            const std::string& dir) {
  check(spec);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot be created (" + ec.message() + ")");
  planted_criteo_summary summary;
  const std::string suffix = spec.gzip ? ".tsv.gz" : ".tsv";
  summary.train_path = dir + "/train" + suffix;
  summary.test_path = dir + "/test" + suffix;

  planted_model m = make_model(spec);
  m.drift = spec.drift;
  std::vector<std::vector<bool>> seen;
  for (const auto& law : m.laws) {
    summary.vocabulary.push_back(law.vocabulary);
    seen.emplace_back(static_cast<size_t>(law.vocabulary) + 1, false);
  }
  written_rows train, test;
  if (spec.days > 0) {
    write_days(m, spec, dir, suffix, summary, train, test);
  } else {
    train = write_rows(m, spec.seed, 1, spec.rows, summary.train_path, spec.gzip, false, &seen);
    test = write_rows(m, spec.seed, 2, spec.test_rows, summary.test_path, spec.gzip, true, nullptr);
  }

  if (spec.days == 0)
    for (const auto& s : seen)  // rank 0 (missing) is no value
      summary.distinct_train_values.push_back(std::count(s.begin() + 1, s.end(), true));
  summary.interaction_pairs = m.pairs;
  summary.bias = m.bias;
  summary.positive_rate = static_cast<double>(train.clicks)
                          / static_cast<double>(spec.rows * std::max(1, spec.days));
  summary.test_positive_rate =
      static_cast<double>(test.clicks) / static_cast<double>(spec.test_rows);
  const size_t n = test.labels.size();
  summary.best_test_auc = roc_auc(test.logits.data(), test.labels.data(), n);
  summary.best_test_logloss = mean_logloss_from_logits(test.logits.data(), test.labels.data(), n);
  summary.linear_part_test_auc = roc_auc(test.linear_logits.data(), test.labels.data(), n);
  return summary;
}

} // namespace actorps
