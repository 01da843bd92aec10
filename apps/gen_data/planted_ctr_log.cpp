#include "apps/gen_data/planted_ctr_log.hpp"

#include "actors/ps/binary_metrics.hpp"
#include "actors/ps/splitmix64.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace actorps {

namespace {

constexpr int users = 200, items = 300, history_items = 400, tags = 40;
constexpr int max_history = 8, max_tags = 4;
constexpr double age_boundaries[] = {25, 35, 50, 65};
constexpr double pi = 3.14159265358979323846;

/// Uniform in (0, 1), never 0.
double open_unit(splitmix64& random) {
  return (static_cast<double>(random.next() >> 11) + 0.5) * 0x1p-53;
}

double normal(splitmix64& random) {
  return std::sqrt(-2 * std::log(open_unit(random))) * std::cos(2 * pi * open_unit(random));
}

int uniform_int(splitmix64& random, int n) { return static_cast<int>(random.next() % uint64_t(n)); }

/// The planted effects, drawn from their own stream.
struct planted_model {
  double bias = -1.0;
  std::vector<double> age, user, item, history, tag;
  double missing_item = 0;

  explicit planted_model(uint64_t seed) {
    splitmix64 random(splitmix64_mix(seed ^ 0x5eedull));
    auto draw = [&](std::vector<double>& w, int n, double scale) {
      w.resize(static_cast<std::size_t>(n));
      for (auto& x : w) x = scale * normal(random);
    };
    draw(age, 5, 0.4);
    draw(user, users, 0.5);
    draw(item, items, 0.6);
    missing_item = 0.6 * normal(random);
    draw(history, history_items, 1.2);
    draw(tag, tags, 0.3);
  }
};

/// One row: its columns' text and its true logit.
struct planted_row {
  float label = 0, logit = 0;
  uint64_t user = 0;
};

/// A Zipf-like rank in [0, n): the continuous power law x^-1.1 on [1, n + 1), rounded down.
int zipf(splitmix64& random, int n) {
  const double s = 1.1, span = std::pow(n + 1.0, 1 - s) - 1;
  const double x = std::pow(1 + open_unit(random) * span, 1 / (1 - s));
  return std::min(n - 1, static_cast<int>(x) - 1);
}

/// Writes `rows` rows of stream `stream` to `path`; returns each row's label, logit and user.
std::vector<planted_row> write_rows(const planted_model& m, uint64_t seed, uint64_t stream,
                                    int64_t rows, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot be written");
  splitmix64 random(splitmix64_mix(seed ^ (stream * 0xd1b54a32d192ed03ull)));
  std::vector<planted_row> written;
  written.reserve(static_cast<std::size_t>(rows));
  std::string line;
  char number[64];
  for (int64_t r = 0; r < rows; ++r) {
    line.clear();
    const double weight = 0.5 * (1 + uniform_int(random, 4));
    const double price = 20 + 5 * normal(random);
    const bool visits_missing = random.next_unit() < 0.1;
    int visits = 0;
    while (random.next_unit() < 0.7 && visits < 200) ++visits;
    const int age = 16 + uniform_int(random, 60);
    const int user = uniform_int(random, users);
    const bool item_missing = random.next_unit() < 0.05;
    const int item = zipf(random, items);
    const int history_length = uniform_int(random, max_history + 1);
    int bag[max_history];
    for (int k = 0; k < history_length; ++k) bag[k] = zipf(random, history_items);
    const int tag_count = 1 + uniform_int(random, max_tags);
    int tag_bag[max_tags];
    for (int k = 0; k < tag_count; ++k) tag_bag[k] = uniform_int(random, tags);

    const int bucket = static_cast<int>(
      std::upper_bound(std::begin(age_boundaries), std::end(age_boundaries), double(age))
      - std::begin(age_boundaries));
    double logit = m.bias + 0.3 * (price - 20) / 5 + m.age[bucket] + m.user[user]
                   + (item_missing ? m.missing_item : m.item[item]);
    if (!visits_missing) logit += 0.25 * std::log1p(double(visits));
    if (history_length > 0) {
      double sum = 0;
      for (int k = 0; k < history_length; ++k) sum += m.history[bag[k]];
      logit += sum / history_length;
    }
    for (int k = 0; k < tag_count; ++k) logit += m.tag[tag_bag[k]];
    const double p = 1 / (1 + std::exp(-logit));
    const float label = random.next_unit() < p ? 1.0f : 0.0f;

    std::snprintf(number, sizeof number, "%g\t%g\t%.3f\t", double(label), weight, price);
    line += number;
    if (!visits_missing) line += std::to_string(visits);
    line += '\t' + std::to_string(age) + "\tu" + std::to_string(user) + '\t';
    if (!item_missing) line += "i" + std::to_string(item);
    line += '\t';
    for (int k = 0; k < history_length; ++k) line += (k ? "|h" : "h") + std::to_string(bag[k]);
    line += '\t';
    for (int k = 0; k < tag_count; ++k) line += (k ? "|t" : "t") + std::to_string(tag_bag[k]);
    line += '\n';
    out << line;
    written.push_back({label, static_cast<float>(logit), static_cast<uint64_t>(user)});
  }
  out.flush();
  if (!out) throw std::runtime_error(path + ": write failed");
  return written;
}

const char* schema_text =
  R"({
  "columns": [
    {"name": "click",   "type": "label"},
    {"name": "weight",  "type": "weight"},
    {"name": "price",   "type": "numeric", "transform": "standardise", "mean": 20, "std": 5},
    {"name": "visits",  "type": "numeric", "transform": "log1p"},
    {"name": "age",     "type": "numeric", "transform": "bucketize",
     "boundaries": [25, 35, 50, 65]},
    {"name": "user",    "type": "categorical"},
    {"name": "item",    "type": "categorical"},
    {"name": "history", "type": "multi_hot", "separator": "|", "max_length": 8, "pooling": "mean"},
    {"name": "tags",    "type": "multi_hot", "separator": "|", "max_length": 4, "pooling": "sum"}
  ]
}
)";

double positive_rate(const std::vector<planted_row>& rows) {
  double positives = 0;
  for (const auto& r : rows) positives += r.label;
  return rows.empty() ? 0 : positives / double(rows.size());
}

} // namespace

planted_ctr_log_summary write_planted_ctr_log(const planted_ctr_log_spec& spec,
                                              const std::string& dir) {
  if (spec.rows < 1 || spec.rows > (int64_t{1} << 31))
    throw std::invalid_argument("--rows must be 1 to 2^31");
  if (spec.test_rows < 1 || spec.test_rows > (int64_t{1} << 31))
    throw std::invalid_argument("--test-rows must be 1 to 2^31");
  std::filesystem::create_directories(dir);
  planted_ctr_log_summary summary;
  summary.train_path = (std::filesystem::path(dir) / "train.tsv").string();
  summary.test_path = (std::filesystem::path(dir) / "test.tsv").string();
  summary.schema_path = (std::filesystem::path(dir) / "schema.json").string();
  planted_model m(spec.seed);
  {  // the bias for a click rate near 30 % on the first test rows' logits
    auto sample = write_rows(m, spec.seed, 3, 4000, summary.test_path);
    double lo = -10, hi = 10;
    for (int i = 0; i < 60; ++i) {
      const double b = (lo + hi) / 2;
      double rate = 0;
      for (const auto& r : sample) rate += 1 / (1 + std::exp(-(r.logit - m.bias + b)));
      (rate / double(sample.size()) < 0.3 ? lo : hi) = b;
    }
    m.bias = (lo + hi) / 2;
  }
  const auto train = write_rows(m, spec.seed, 1, spec.rows, summary.train_path);
  const auto test = write_rows(m, spec.seed, 2, spec.test_rows, summary.test_path);
  {
    std::ofstream out(summary.schema_path, std::ios::trunc);
    out << schema_text;
    if (!out) throw std::runtime_error(summary.schema_path + ": cannot be written");
  }
  std::vector<float> logits, labels;
  std::vector<uint64_t> groups;
  for (const auto& r : test) {
    logits.push_back(r.logit);
    labels.push_back(r.label);
    groups.push_back(r.user);
  }
  summary.positive_rate = positive_rate(train);
  summary.test_positive_rate = positive_rate(test);
  summary.best_test_auc = roc_auc(logits.data(), labels.data(), logits.size());
  summary.best_test_gauc = group_auc(logits.data(), labels.data(), groups.data(), logits.size());
  summary.best_test_logloss = mean_logloss_from_logits(logits.data(), labels.data(), logits.size());
  return summary;
}

} // namespace actorps
