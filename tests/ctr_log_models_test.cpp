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

#include <doctest/doctest.h>

#include <string>

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

TEST_CASE("a model shaped by a log's schema: --export-dir refused up front, criteo: refused") {
  test::text_file_dir dir("actorps_ctr_log_refusals");
  planted_ctr_log_spec spec;
  spec.rows = 2000;
  spec.test_rows = 500;
  const auto data = write_planted_ctr_log(spec, dir.path);
  const std::string log = " --dataset tsv:" + data.train_path + " --test " + data.test_path
                          + " --schema " + data.schema_path;
  auto r = test::run_actorps("simulate --no-progress --model dlrm" + log + " --export-dir "
                             + dir.path + "/export");
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find("--export-dir " + dir.path + "/export: an export serves Criteo's")
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
  auto summary = train(opts);
  REQUIRE_MESSAGE(summary, to_string(summary.error()));
  CHECK(summary->workers_lost == 0);  // a worker given Criteo's shape fails on the log's rows
  CHECK(summary->final_test_auc > data.best_test_auc - 0.02);
}

} // namespace actorps
