// The metrics CTR teams read, end to end: `simulate --gauc-group C1` writes GAUC and calibration
// in every eval event and the summary, and the printed summary leads with AUC. The figures are
// held to an independent computation: the exported model's own predictions (`actorps predict`)
// grouped by the test file's C1 text, AUC by its pairwise definition in each group. The group
// field travels to an evaluator process in its RoleSetup.
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire.hpp"
#include "tests/command_runner.hpp"
#include "tests/generated_ctr_run.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"
#include "actors/ps/model_registry.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace actorps {
namespace {

using json = nlohmann::json;

struct test_row {
  float label = 0;
  std::string group;  // the C1 text as the file holds it
};

std::vector<test_row> read_rows(const std::string& path) {
  std::vector<test_row> rows;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream cut(line);
    for (std::string f; std::getline(cut, f, '\t');) fields.push_back(f);
    REQUIRE(fields.size() >= 15);
    rows.push_back({std::stof(fields[0]), fields[14]});  // label, I1..I13, C1
  }
  return rows;
}

} // namespace

TEST_CASE("ctr metrics: --gauc-group C1 puts GAUC and calibration in the events and summary") {
  test::scratch_dir dir("actorps_ctr_metrics");
  const auto run = test::run_lr_on_generated_criteo(dir, "--no-progress --gauc-group C1");
  const auto &train = run.train, &test = run.test, &metrics = run.metrics, &exports = run.exports;

  // Every evaluation carries both; the summary the final ones.
  const auto evals = test::metrics_events(metrics, "eval");
  REQUIRE(evals.size() >= 2);
  for (const auto& e : evals) {
    CHECK(e.contains("test_gauc"));
    CHECK(e.contains("test_calibration"));
  }
  const auto summary = test::metrics_summary(metrics);
  REQUIRE(summary.contains("final_test_gauc"));
  REQUIRE(summary.contains("final_test_calibration"));
  const double gauc = summary["final_test_gauc"].get<double>();
  const double calibration = summary["final_test_calibration"].get<double>();
  CHECK(evals.back()["test_gauc"].get<double>() == gauc);

  // The independent figures: the exported model's probabilities, grouped by C1's text.
  const auto predicted = test::run_actorps("predict --model " + exports + "/1 --input " + test);
  REQUIRE_MESSAGE(predicted.status == 0, predicted.output);
  const auto rows = read_rows(test);
  std::vector<double> p;
  std::istringstream lines(predicted.output);
  for (std::string line; std::getline(lines, line);)
    p.push_back(json::parse(line)["probability"].get<double>());
  REQUIRE(p.size() == rows.size());
  std::map<std::string, std::vector<std::size_t>> groups;
  double predicted_sum = 0, clicks = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    groups[rows[i].group].push_back(i);
    predicted_sum += p[i];
    clicks += rows[i].label;
  }
  double weighted = 0, weight = 0;
  int scored = 0;
  for (const auto& [value, members] : groups) {
    double wins = 0, pairs = 0;
    for (auto i : members)
      for (auto j : members)
        if (rows[i].label == 1 && rows[j].label == 0) {
          pairs += 1;
          wins += p[i] > p[j] ? 1 : p[i] == p[j] ? 0.5 : 0;
        }
    if (pairs == 0) continue;  // one class only: no AUC
    ++scored;
    weighted += wins / pairs * double(members.size());
    weight += double(members.size());
  }
  CAPTURE(groups.size());
  REQUIRE(scored > 10);
  // The evaluator ranks float logits, predict rounds σ to a double of a float: ties may differ.
  CHECK(gauc == doctest::Approx(weighted / weight).epsilon(2e-3));
  CHECK(calibration == doctest::Approx(predicted_sum / clicks).epsilon(1e-4));
  const double auc = summary["final_test_auc"].get<double>();
  CHECK(std::fabs(gauc - auc) > 1e-4);  // a figure of its own, not the AUC again

  // The printed summary leads with AUC, then GAUC and calibration; accuracy comes last.
  const auto& printed = run.output;
  const auto at = printed.find("final test auc");
  REQUIRE(at != std::string::npos);
  const auto line = printed.substr(at, printed.find('\n', at) - at);
  CAPTURE(line);
  CHECK(line.find(", gauc ") != std::string::npos);
  CHECK(line.find(", calibration ") != std::string::npos);
  CHECK(line.find("accuracy") > line.find("calibration"));
  CHECK(printed.find("final test accuracy") == std::string::npos);

  // Without --gauc-group: calibration still, no GAUC anywhere.
  const auto plain = test::run_actorps("simulate --no-progress --model lr --dataset criteo:" + train
                                       + " --test " + test + " --batch 128 --steps 20 --metrics "
                                       + dir.path + "/plain.jsonl");
  REQUIRE_MESSAGE(plain.status == 0, plain.output);
  const auto plain_summary = test::metrics_summary(dir.path + "/plain.jsonl");
  CHECK(plain_summary.contains("final_test_calibration"));
  CHECK_FALSE(plain_summary.contains("final_test_gauc"));
  CHECK(plain.output.find("gauc") == std::string::npos);
}

TEST_CASE("ctr metrics: --gauc-group names a Criteo field, or the run is refused naming it") {
  test::scratch_dir dir("actorps_ctr_metrics_flags");
  const auto gen = test::run_actorps("gen-data criteo --out " + dir.path
                                     + " --rows 2000 --test-rows 200");
  REQUIRE_MESSAGE(gen.status == 0, gen.output);
  const std::string data = " --dataset criteo:" + dir.path + "/train.tsv --test " + dir.path
                           + "/test.tsv";
  struct refused {
    std::string args, says;
  };
  for (const auto& c : std::vector<refused>{
         {"--model lr" + data + " --gauc-group C27", "--gauc-group must be a categorical field"},
         {"--model lr" + data + " --gauc-group I3", "C1..C26 (got I3)"},
         {"--model lr" + data + " --gauc-group C", "--gauc-group"},
         {"--dataset synthetic --gauc-group C1", "--gauc-group C1 needs --dataset criteo:PATH"}}) {
    CAPTURE(c.args);
    const auto r = test::run_actorps("simulate --no-progress --steps 5 " + c.args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.output.find(c.says) != std::string::npos, r.output);
  }
}

} // namespace actorps
