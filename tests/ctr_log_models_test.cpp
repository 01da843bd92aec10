// The CTR models on a log of one's own (`actorps gen-data ctr-log`): numeric, categorical,
// multi-hot (sum- and mean-pooled bags, empty ones among them) and weight columns described by
// a schema. Each of lr, dlrm, wdl and deepfm, trained one epoch in one process, comes within
// 0.01 AUC of the planted model's own (the generator's best), with GAUC and calibration in the
// metrics file's eval events; the run's spec names the schema's shape. The run as processes
// is tests/ctr_log_processes_test.sh.
#include "actors/ps.hpp"
#include "apps/gen_data/planted_ctr_log.hpp"
#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/text_file_dir.hpp"

#include "actors/ps/feature_schema.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace actorps {

TEST_CASE("lr, dlrm, wdl and deepfm on a generated log with bags and weights: within 0.01 AUC "
          "of the generator's best in one epoch") {
  test::text_file_dir dir("actorps_ctr_log");
  planted_ctr_log_spec spec;
  spec.rows = 400000;  // one epoch of it: dlrm 3 s, wdl 9 s on a CPU core
  spec.test_rows = 20000;
  spec.seed = 5;
  const auto data = write_planted_ctr_log(spec, dir.path);
  INFO("generator's best test AUC " << data.best_test_auc);
  REQUIRE(data.best_test_auc > 0.75);  // a problem with something to learn
  for (const std::string model : {"lr", "dlrm", "wdl", "deepfm"}) {
    CAPTURE(model);
    const auto metrics = dir.path + "/" + model + ".jsonl";
    const auto r = test::run_actorps(
      "simulate --no-progress --mode sync --epochs 1 --workers 2 --model " + model
      + " --dataset tsv:" + data.train_path + " --test " + data.test_path + " --schema "
      + data.schema_path + " --gauc-group user --metrics " + metrics);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    const auto evals = test::metrics_events(metrics, "eval");
    REQUIRE(!evals.empty());
    const auto& last = evals.back();
    CAPTURE(last.dump());
    const double auc = last["test_auc"].get<double>();
    CHECK(auc > data.best_test_auc - 0.01);
    CHECK(last["test_gauc"].get<double>() > 0.5);
    CHECK(last["test_calibration"].get<double>() > 0.8);
    CHECK(last["test_calibration"].get<double>() < 1.25);
    // the shape the schema gives (2 dense values, 5 key fields) is in the model's name
    const auto start = test::metrics_events(metrics, "start");
    REQUIRE(!start.empty());
    CHECK(start.front()["model"].get<std::string>().find(":2x5") != std::string::npos);
  }
}

namespace {

/// ROC AUC of `p` against 0/1 `y`, ties counted half: the brute-force pair count.
double pairwise_auc(const std::vector<double>& p, const std::vector<int>& y) {
  std::vector<double> pos, neg;
  for (std::size_t i = 0; i < p.size(); ++i) (y[i] ? pos : neg).push_back(p[i]);
  std::sort(neg.begin(), neg.end());
  double wins = 0;
  for (double x : pos) {
    const auto below = std::lower_bound(neg.begin(), neg.end(), x) - neg.begin();
    const auto equal = std::upper_bound(neg.begin(), neg.end(), x) - neg.begin() - below;
    wins += double(below) + 0.5 * double(equal);
  }
  return wins / (double(pos.size()) * double(neg.size()));
}

} // namespace

TEST_CASE("lr, dlrm, wdl and deepfm on a generated log export with their schema: evaluate and "
          "predict on the export give the run's own test figures") {
  test::text_file_dir dir("actorps_ctr_log_export");
  planted_ctr_log_spec spec;
  spec.rows = 60000;
  spec.test_rows = 5000;
  spec.seed = 7;
  const auto data = write_planted_ctr_log(spec, dir.path);
  // the test file's labels, an observer independent of the model's reader
  const auto schema = load_feature_schema(data.schema_path);
  std::vector<int> labels;
  {
    std::ifstream in(data.test_path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      std::size_t at = 0;
      for (int c = 0; c < schema.label; ++c) at = line.find('\t', at) + 1;
      labels.push_back(line[at] == '1' ? 1 : 0);
    }
  }
  REQUIRE(labels.size() == 5000);
  for (const std::string model : {"lr", "dlrm", "wdl", "deepfm"}) {
    CAPTURE(model);
    const auto metrics = dir.path + "/" + model + ".jsonl";
    const auto out = dir.path + "/export-" + model;
    auto r = test::run_actorps(
      "simulate --no-progress --mode sync --epochs 1 --workers 2 --model " + model
      + " --dataset tsv:" + data.train_path + " --test " + data.test_path + " --schema "
      + data.schema_path + " --metrics " + metrics + " --export-dir " + out);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    const auto evals = test::metrics_events(metrics, "eval");
    REQUIRE(!evals.empty());
    const double run_auc = evals.back()["test_auc"].get<double>();
    const double run_loss = evals.back()["test_logloss"].get<double>();
    CAPTURE(evals.back().dump());
    // no model.onnx (bags pool per sample), the schema inside model.capnp and metadata.json
    CHECK(std::filesystem::exists(out + "/1/model.capnp"));
    CHECK(!std::filesystem::exists(out + "/1/model.onnx"));
    std::ifstream meta_file(out + "/1/metadata.json");
    const auto meta = nlohmann::json::parse(meta_file);
    CHECK(meta["layout"]["name"] == "schema");
    CHECK(meta["layout"]["field_tables"].get<std::vector<int>>() == schema.field_tables);
    CHECK(meta["layout"]["dense_width"] == schema.dense_width);
    CHECK(std::abs(meta["test_auc"].get<double>() - run_auc) < 1e-6);

    // evaluate reads the test file by the recorded schema (no --schema given) and gives the
    // run's final figures
    r = test::run_actorps("evaluate --json --model " + out + "/1 --test " + data.test_path);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    const auto eval = nlohmann::json::parse(r.output);
    CAPTURE(eval.dump());
    CHECK(eval["rows"] == 5000);
    CHECK(std::abs(eval["auc"].get<double>() - run_auc) < 1e-6);
    CHECK(std::abs(eval["logloss"].get<double>() - run_loss) < 1e-6);

    // predict's probabilities, one a line in file order, give that AUC and logloss again
    r = test::run_actorps("predict --model " + out + "/1 --input " + data.test_path);
    REQUIRE_MESSAGE(r.status == 0, r.output.substr(0, 2000));
    std::vector<double> p;
    std::istringstream lines(r.output);
    std::string line;
    while (std::getline(lines, line)) {
      const auto j = nlohmann::json::parse(line);
      REQUIRE(j["index"] == p.size());
      p.push_back(j["probability"].get<double>());
    }
    REQUIRE(p.size() == labels.size());
    double loss = 0;
    for (std::size_t i = 0; i < p.size(); ++i)
      loss -= labels[i] ? std::log(p[i]) : std::log1p(-p[i]);
    CHECK(std::abs(pairwise_auc(p, labels) - run_auc) < 1e-6);
    CHECK(std::abs(loss / double(p.size()) - run_loss) < 1e-5);  // from p, not the logits
    CHECK(run_auc > data.best_test_auc - 0.05);  // a model that learned, not a constant
  }
}

TEST_CASE("a model shaped by a log's schema: --export-every refused up front, criteo: refused") {
  test::text_file_dir dir("actorps_ctr_log_refusals");
  planted_ctr_log_spec spec;
  spec.rows = 2000;
  spec.test_rows = 500;
  const auto data = write_planted_ctr_log(spec, dir.path);
  const std::string log = " --dataset tsv:" + data.train_path + " --test " + data.test_path
                          + " --schema " + data.schema_path;
  auto r = test::run_actorps("simulate --no-progress --model dlrm" + log + " --export-dir "
                             + dir.path + "/export --export-every 10");
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find("--export-every: versions while training serve Criteo's layout")
                  != std::string::npos,
                r.output);
  // a checkpoint does not hold the schema: `actorps export --checkpoint` refuses, saying so
  r = test::run_actorps("simulate --no-progress --model lr" + log + " --checkpoint-dir "
                        + dir.path + "/ck --checkpoint-every 2");
  REQUIRE_MESSAGE(r.status == 0, r.output);
  r = test::run_actorps("export --checkpoint " + dir.path + "/ck --export-dir " + dir.path
                        + "/ckx --test " + data.test_path);
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find("reads a log's schema, which a checkpoint does not hold")
                  != std::string::npos,
                r.output);
  r = test::run_actorps("simulate --no-progress --model dlrm:8::4:2x5 --dataset criteo:"
                        + data.train_path + " --test " + data.test_path);
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find("criteo:PATH gives 13 and 26") != std::string::npos, r.output);
}

TEST_CASE("the library's train() shapes a CTR model by the log's schema, as the command does") {
  test::text_file_dir dir("actorps_ctr_log_library");
  planted_ctr_log_spec spec;
  spec.rows = 100000;
  spec.test_rows = 20000;
  spec.seed = 5;
  const auto data = write_planted_ctr_log(spec, dir.path);
  train_options opts;
  opts.model = "lr";
  opts.source.what = data_source::kind::logs;
  opts.source.train_path = data.train_path;
  opts.source.test_path = data.test_path;
  opts.source.schema_path = data.schema_path;
  opts.mode = consistency::sync;
  opts.batch = 256;
  opts.epochs = 1;
  opts.threads = 2;
  opts.export_dir = dir.path + "/export";
  opts.export_every = 10;  // versions while training carry no schema: refused before the run
  const auto refused = train(opts);
  REQUIRE(!refused);
  CHECK_MESSAGE(to_string(refused.error()).find("--export-every: versions while training serve "
                                                "Criteo's layout")
                  != std::string::npos,
                to_string(refused.error()));
  opts.export_every = 0;  // the export after the run records the schema
  auto summary = train(opts);
  REQUIRE_MESSAGE(summary, to_string(summary.error()));
  CHECK(std::filesystem::exists(dir.path + "/export/1/model.capnp"));
  CHECK(summary->workers_lost == 0);  // a worker given Criteo's shape fails on the log's rows
  CHECK(summary->final_test_auc > data.best_test_auc - 0.02);
}

} // namespace actorps
