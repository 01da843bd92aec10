// Per-slice AUC end to end: `simulate --slice-auc C6` writes the AUC of the 10 slices of the
// test rows (those sharing C6's value) holding most rows, and the rows of the rest, in every
// eval event and the summary, and prints them. The figures are held to an independent
// computation: the exported model's own predictions (`actorps predict`) grouped by the test
// file's C6 text, AUC by its pairwise definition in each group; a slice's key is the public
// actorps::feature_key of its text. A field that is none is refused naming the flag (exit 2),
// and the library's and the Python door's option the same way.
#include "actors/ps.hpp"
#include "actors/ps/feature_key.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/ps/model_registry.hpp"
#include "tests/command_runner.hpp"
#include "tests/generated_ctr_run.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace actorps {
namespace {

using json = nlohmann::json;

constexpr int c6_column = 1 + 13 + 5;  // label, I1..I13, C1..C5

struct expected_slice {
  uint64_t key = 0;
  int64_t rows = 0, positives = 0;
  double auc = 0;
};

/// The slices of `test` by C6 text, scored with `p` (one probability per line), largest first
/// (a tie: the smaller key first), each AUC by counting pairs.
std::vector<expected_slice> brute_force_slices(const std::string& test,
                                               const std::vector<double>& p) {
  std::vector<float> labels;
  std::map<std::string, std::vector<std::size_t>> by_value;
  std::ifstream in(test);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream cut(line);
    for (std::string f; std::getline(cut, f, '\t');) fields.push_back(f);
    REQUIRE(fields.size() > std::size_t(c6_column));
    by_value[fields[c6_column]].push_back(labels.size());
    labels.push_back(std::stof(fields[0]));
  }
  REQUIRE(labels.size() == p.size());
  std::vector<expected_slice> out;
  for (const auto& [text, members] : by_value) {
    expected_slice s;
    s.key = feature_key(5, text);
    s.rows = static_cast<int64_t>(members.size());
    double wins = 0, pairs = 0;
    for (auto i : members) {
      s.positives += labels[i] == 1;
      for (auto j : members)
        if (labels[i] == 1 && labels[j] == 0) {
          pairs += 1;
          wins += p[i] > p[j] ? 1 : p[i] == p[j] ? 0.5 : 0;
        }
    }
    s.auc = pairs > 0 ? wins / pairs : -1;
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const expected_slice& a, const expected_slice& b) {
    return a.rows != b.rows ? a.rows > b.rows : a.key < b.key;
  });
  return out;
}

} // namespace

TEST_CASE("slice auc: --slice-auc C6 reports the 10 largest slices' AUC, held to a brute-force "
          "computation") {
  test::scratch_dir dir("actorps_slice_auc");
  const auto run = test::run_lr_on_generated_criteo(dir, "--slice-auc C6");
  const auto &test = run.test, &metrics = run.metrics, &exports = run.exports;
  const auto& printed = run.output;

  const auto evals = test::metrics_events(metrics, "eval");
  REQUIRE(evals.size() >= 2);
  for (const auto& e : evals) {
    REQUIRE(e.contains("test_slice_auc"));
    CHECK(e["test_slice_auc"].size() == 10);
    CHECK(e["test_slice_rest_rows"].get<int64_t>() > 0);
  }
  const auto summary = test::metrics_summary(metrics);
  REQUIRE(summary.contains("final_test_slice_auc"));
  CHECK(summary["final_test_slice_auc"] == evals.back()["test_slice_auc"]);
  CHECK(summary["final_test_slice_rest_rows"] == evals.back()["test_slice_rest_rows"]);

  const auto predicted = test::run_actorps("predict --model " + exports + "/1 --input " + test);
  REQUIRE_MESSAGE(predicted.status == 0, predicted.output);
  std::vector<double> p;
  std::istringstream lines(predicted.output);
  for (std::string line; std::getline(lines, line);)
    p.push_back(json::parse(line)["probability"].get<double>());
  const auto want = brute_force_slices(test, p);
  REQUIRE(want.size() > 10);
  const auto& got = summary["final_test_slice_auc"];
  int64_t rest = 0;
  for (std::size_t i = 10; i < want.size(); ++i) rest += want[i].rows;
  CHECK(summary["final_test_slice_rest_rows"].get<int64_t>() == rest);
  for (std::size_t i = 0; i < 10; ++i) {
    CAPTURE(i);
    CHECK(got[i]["key"].get<std::string>() == std::to_string(want[i].key));
    CHECK(got[i]["rows"].get<int64_t>() == want[i].rows);
    CHECK(got[i]["positives"].get<int64_t>() == want[i].positives);
    REQUIRE(want[i].auc >= 0);  // the 10 largest hold both classes here
    // The evaluator ranks float logits, predict rounds σ to a double of a float: ties may differ.
    CHECK(got[i]["auc"].get<double>() == doctest::Approx(want[i].auc).epsilon(2e-3));
  }
  // a figure of each slice's own: they differ from each other and from the whole set's AUC
  CHECK(got[0]["auc"].get<double>() != got[1]["auc"].get<double>());

  // The progress line after an evaluation names its weakest slice.
  bool shown = false;
  for (const auto& e : evals) {
    double weakest = 2;
    for (const auto& slice : e["test_slice_auc"])
      if (slice["auc"].is_number()) weakest = std::min(weakest, slice["auc"].get<double>());
    char text[40];
    std::snprintf(text, sizeof text, "slice auc min %.4f ", weakest);
    shown = shown || printed.find(text) != std::string::npos;
  }
  CHECK_MESSAGE(shown, printed);

  // The printed summary: one line with the slices, largest first.
  const auto at = printed.find("slice auc (key: auc over rows): " + std::to_string(want[0].key));
  CHECK_MESSAGE(at != std::string::npos, printed);
  CHECK(printed.find(std::to_string(rest) + " rows in other slices") != std::string::npos);
}

TEST_CASE("slice auc: a field that is none is refused naming --slice-auc, slice_auc") {
  test::scratch_dir dir("actorps_slice_auc_flags");
  const auto gen = test::run_actorps("gen-data criteo --out " + dir.path
                                     + " --rows 2000 --test-rows 200");
  REQUIRE_MESSAGE(gen.status == 0, gen.output);
  const std::string data = " --dataset criteo:" + dir.path + "/train.tsv --test " + dir.path
                           + "/test.tsv";
  struct refused {
    std::string args, says;
  };
  for (const auto& c : std::vector<refused>{
         {"--model lr" + data + " --slice-auc C27",
          "--slice-auc C27 is not a categorical field of the Criteo layout, C1..C26"},
         {"--model lr" + data + " --slice-auc I3", "--slice-auc I3 is not a categorical field"},
         {"--dataset synthetic --slice-auc C1", "--slice-auc C1 needs Criteo data"}}) {
    CAPTURE(c.args);
    const auto r = test::run_actorps("simulate --no-progress --steps 5 " + c.args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.output.find(c.says) != std::string::npos, r.output);
  }
  // the library's option: refused before anything runs
  train_options o;
  o.model = "lr";
  o.source.what = data_source::kind::criteo;
  o.source.train_path = dir.path + "/train.tsv";
  o.source.test_path = dir.path + "/test.tsv";
  o.steps = 2;
  o.slice_auc = "C0";
  auto bad = train(o);
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == make_error(errc::invalid_spec));
  CHECK(describe(bad.error()).find("--slice-auc C0 is not a categorical field")
        != std::string::npos);
  // and a good one reaches the summary
  o.slice_auc = "C6";
  auto good = train(o);
  REQUIRE(good);
  const auto& slices = good->final_test_slices;
  REQUIRE(slices.size() >= 2);
  CHECK(slices.size() <= 10);
  CHECK(slices.front().rows >= slices.back().rows);
  CHECK(good->final_test_slice_rest_rows >= 0);
}

} // namespace actorps
