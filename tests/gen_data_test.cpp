#include "actors/data/criteo_reader.hpp"
#include "actors/data/libsvm_reader.hpp"

#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace actorps;
using test::run_actorps;

namespace {

const std::string small = "gen-data libsvm --rows 3000 --test-rows 1000 --features 20000 --nnz 8";
const std::string small_criteo = "gen-data criteo --rows 4000 --test-rows 4000";

/// Runs gen-data with `args`, requires success, returns its JSON line.
nlohmann::json generate(const std::string& args) {
  const auto r = run_actorps(args);
  INFO(r.output);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.output);
}

} // namespace

TEST_CASE("gen-data libsvm writes the same bytes for a seed and other bytes for another") {
  test::scratch_dir dir("actorps_gen");
  const auto a = dir.path + "/a", b = dir.path + "/b", c = dir.path + "/c";
  generate(small + " --seed 5 --out " + a);
  generate(small + " --seed 5 --out " + b);
  generate(small + " --seed 6 --out " + c);
  const auto files = test::dir_contents(a);
  CHECK(test::dir_entries(a) == std::set<std::string>{"test.libsvm", "train.libsvm"});
  CHECK(files == test::dir_contents(b));
  const auto other = test::dir_contents(c);
  CHECK(other.at("train.libsvm") != files.at("train.libsvm"));
  CHECK(other.at("test.libsvm") != files.at("test.libsvm"));
}

TEST_CASE("gen-data libsvm files read back as the rows its summary describes") {
  test::scratch_dir dir("actorps_gen");
  const auto summary = generate(small + " --seed 3 --out " + dir.path + "/plain");
  const auto zipped = generate(small + " --seed 3 --gzip --out " + dir.path + "/gz");
  CHECK(summary["rows"] == 3000);
  CHECK(summary["test_rows"] == 1000);
  CHECK(summary["features"] == 20000);
  for (const char* same : {"distinct_train_features", "positive_rate", "test_positive_rate",
                           "best_test_auc", "best_test_logloss"})
    CHECK(zipped[same] == summary[same]);

  libsvm_reader plain(summary["train"].get<std::string>());
  libsvm_reader gz(zipped["train"].get<std::string>());
  CHECK(gz.compressed());
  sparse_batch batch, gz_batch;
  std::set<uint64_t> distinct;
  int64_t positives = 0;
  while (plain.next_batch(500, batch) > 0) {
    REQUIRE(gz.next_batch(500, gz_batch) == batch.rows());
    CHECK(gz_batch.keys == batch.keys);
    CHECK(gz_batch.labels == batch.labels);
    for (size_t r = 0; r < batch.rows(); ++r) {
      REQUIRE(batch.offsets[r + 1] - batch.offsets[r] == 8);
      const auto first = batch.keys.begin() + static_cast<long>(batch.offsets[r]);
      CHECK(std::adjacent_find(first, first + 8, std::greater_equal<uint64_t>()) == first + 8);
      CHECK(*first >= 1);
      CHECK(first[7] <= 20000);
      positives += batch.labels[r] == 1.0f;
    }
    distinct.insert(batch.keys.begin(), batch.keys.end());
    CHECK(std::all_of(batch.values.begin(), batch.values.end(), [](float v) { return v == 1; }));
  }
  CHECK(plain.rows_read() == 3000);
  CHECK(gz.next_batch(500, gz_batch) == 0);
  CHECK(distinct.size() == summary["distinct_train_features"].get<uint64_t>());
  CHECK(positives / 3000.0 == doctest::Approx(summary["positive_rate"].get<double>()));
  CHECK(count_libsvm_rows(summary["test"].get<std::string>()) == 1000);
}

TEST_CASE("gen-data libsvm defaults plant a model well above chance") {
  test::scratch_dir dir("actorps_gen");
  const auto summary = generate("gen-data libsvm --out " + dir.path);
  INFO(summary.dump());
  CHECK(summary["rows"] == 100000);
  CHECK(summary["best_test_auc"].get<double>() > 0.8);
  CHECK(summary["best_test_auc"].get<double>() < 0.95);
  CHECK(summary["best_test_logloss"].get<double>() < std::log(2.0) - 0.1);
  CHECK(summary["positive_rate"].get<double>() > 0.2);
  CHECK(summary["positive_rate"].get<double>() < 0.5);
  // A power law over 1 M features: 100 000 rows of 20 touch a good share, not all.
  CHECK(summary["distinct_train_features"].get<int64_t>() > 100000);
  CHECK(summary["distinct_train_features"].get<int64_t>() < 1000000);
}

TEST_CASE("gen-data names a bad flag and exits 2") {
  test::scratch_dir dir("actorps_gen");
  const std::string out = " --out " + dir.path;
  struct bad_case {
    std::string args, message;
  };
  const std::vector<bad_case> cases = {
      {"gen-data", "which format? (known: libsvm, criteo, ctr-log)"},
      {"gen-data csv" + out, "unknown format 'csv' (known: libsvm, criteo, ctr-log)"},
      {"gen-data libsvm", "--out DIR is required"},
      {"gen-data libsvm --rows 0" + out, "--rows must be at least 1, got 0"},
      {"gen-data libsvm --test-rows -4" + out, "--test-rows must be at least 1, got -4"},
      {"gen-data libsvm --features 0" + out, "--features must be in 1..67108864, got 0"},
      {"gen-data libsvm --features 10 --nnz 6" + out,
       "--nnz must be in 1..1000 and at most half of --features (rows draw distinct features), "
       "got 6"},
      {"gen-data libsvm --rows many" + out, "the argument ('many') for option '--rows' is invalid"},
      {"gen-data criteo", "--out DIR is required"},
      {"gen-data criteo --rows 0" + out, "--rows must be at least 1, got 0"},
      {"gen-data criteo --test-rows -4" + out, "--test-rows must be at least 1, got -4"},
      {"gen-data criteo --features 10" + out, "unrecognised option '--features'"},
  };
  for (const auto& c : cases) {
    const auto r = run_actorps(c.args);
    INFO(c.args);
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(r.output.find(c.message) != std::string::npos);
  }
  CHECK(test::dir_entries(dir.path).empty());
}

TEST_CASE("gen-data criteo writes the same bytes for a seed and other bytes for another") {
  test::scratch_dir dir("actorps_gen");
  const auto a = dir.path + "/a", b = dir.path + "/b", c = dir.path + "/c";
  generate(small_criteo + " --seed 5 --out " + a);
  generate(small_criteo + " --seed 5 --out " + b);
  generate(small_criteo + " --seed 6 --out " + c);
  const auto files = test::dir_contents(a);
  CHECK(test::dir_entries(a) == std::set<std::string>{"test.tsv", "train.tsv"});
  CHECK(files == test::dir_contents(b));
  const auto other = test::dir_contents(c);
  CHECK(other.at("train.tsv") != files.at("train.tsv"));
  CHECK(other.at("test.tsv") != files.at("test.tsv"));
}

TEST_CASE("gen-data criteo files read back as the rows its summary describes") {
  test::scratch_dir dir("actorps_gen");
  // 40 000 rows: interaction vectors sit on values expected in 3 000 rows, which 4 000 lack.
  const std::string criteo = "gen-data criteo --rows 40000 --test-rows 4000";
  const auto summary = generate(criteo + " --seed 3 --out " + dir.path + "/plain");
  const auto zipped = generate(criteo + " --seed 3 --gzip --out " + dir.path + "/gz");
  INFO(summary.dump());
  CHECK(summary["rows"] == 40000);
  CHECK(summary["test_rows"] == 4000);
  for (const char* same : {"vocabulary", "distinct_train_values", "interaction_pairs",
                           "positive_rate", "test_positive_rate", "best_test_auc",
                           "best_test_logloss", "linear_part_test_auc"})
    CHECK(zipped[same] == summary[same]);
  // A click rate near 25 %, and a planted model well above chance that its interactions help.
  for (const char* rate : {"positive_rate", "test_positive_rate"}) {
    CHECK(summary[rate].get<double>() >= 0.2);
    CHECK(summary[rate].get<double>() <= 0.3);
  }
  const double best = summary["best_test_auc"].get<double>();
  CHECK(best > 0.7);
  CHECK(best < 0.9);
  CHECK(summary["linear_part_test_auc"].get<double>() < best);
  CHECK(summary["linear_part_test_auc"].get<double>() > 0.6);
  CHECK(summary["best_test_logloss"].get<double>() < 0.5);  // the rate alone: 0.56
  CHECK(summary["interaction_pairs"].size() == 8);

  criteo_reader plain(summary["train"].get<std::string>());
  criteo_reader gz(zipped["train"].get<std::string>());
  CHECK(gz.compressed());
  criteo_batch batch, gz_batch;
  std::vector<std::set<uint64_t>> distinct(26);
  int64_t positives = 0;
  while (plain.next_batch(1000, batch) > 0) {
    REQUIRE(gz.next_batch(1000, gz_batch) == batch.rows());
    CHECK(gz_batch.keys == batch.keys);
    CHECK(gz_batch.dense == batch.dense);
    CHECK(gz_batch.labels == batch.labels);
    for (size_t i = 0; i < batch.keys.size(); ++i) {
      const uint64_t key = batch.keys[i];
      REQUIRE(criteo_field_of(key) == static_cast<int>(i % 26));
      if ((key & criteo_value_mask) != 0) distinct[i % 26].insert(key);  // not missing
    }
    for (float label : batch.labels) positives += label == 1.0f;
    CHECK(std::all_of(batch.dense.begin(), batch.dense.end(), [](float x) { return x >= 0; }));
  }
  CHECK(plain.rows_read() == 40000);
  CHECK(gz.next_batch(1000, gz_batch) == 0);
  for (size_t f = 0; f < 26; ++f) {
    CAPTURE(f);
    CHECK(distinct[f].size() == summary["distinct_train_values"][f].get<size_t>());
    CHECK(distinct[f].size() <= summary["vocabulary"][f].get<size_t>());
  }
  CHECK(positives / 40000.0 == doctest::Approx(summary["positive_rate"].get<double>()));
  CHECK(count_criteo_rows(summary["test"].get<std::string>()) == 4000);

  // Values are 8 lower-case hex digits or missing; integers are missing, counts, or (I2 only)
  // small negatives.
  std::ifstream text(summary["test"].get<std::string>());
  std::string row;
  int64_t missing_values = 0, negatives = 0;
  for (int n = 0; n < 500 && std::getline(text, row); ++n) {
    std::vector<std::string> fields(1);
    for (char ch : row) {
      if (ch == '\t') fields.emplace_back();
      else fields.back().push_back(ch);
    }
    REQUIRE(fields.size() == 40);
    for (int j = 1; j <= 13; ++j) {
      if (fields[j].empty() || fields[j][0] != '-') continue;
      CHECK(j == 2);
      CHECK(std::stoi(fields[j]) >= -3);
      ++negatives;
    }
    for (int c = 14; c < 40; ++c) {
      missing_values += fields[c].empty();
      CHECK((fields[c].empty() || (fields[c].size() == 8 &&
             fields[c].find_first_not_of("0123456789abcdef") == std::string::npos)));
    }
  }
  CHECK(missing_values > 0);
  CHECK(negatives > 0);
}
