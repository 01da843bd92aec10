// A model carries the settings it trains well with (model_plugin::defaults): `actorps simulate
// --model dlrm` without training flags trains with README's CTR recipe (Adam at 0.003, batch
// 256, 1 epoch, tables at 0.1 admitting a value on its 20th push); a typed flag overrides its
// field alone; the run says which settings are in effect, on its log and in the metrics file's
// start event; the MLP keeps the runtime's defaults.
#include "actors/ps.hpp"
#include "actors/ps/model_registry.hpp"
#include "actors/ps/training_defaults.hpp"

#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <string>

namespace actorps {
namespace {

using json = nlohmann::json;
using test::contains;
using test::run_actorps;

TEST_CASE("model defaults: dlrm's recipe, a chosen field overriding only itself") {
  auto dlrm = make_model("dlrm");
  const auto spec = dlrm->spec();
  auto recipe = resolve_training(spec.name, dlrm->defaults(), {});
  CHECK(recipe.values.optimizer == optimizer_kind::adam);
  CHECK(recipe.values.lr == doctest::Approx(0.003));
  CHECK(recipe.values.batch == 256);
  CHECK(recipe.values.epochs == 1);
  CHECK(recipe.values.table_lr == doctest::Approx(0.1));
  CHECK(recipe.values.admit_after == 20);
  CHECK(recipe.given.empty());

  training_choices batch_only;
  batch_only.batch = 512;
  auto batch = resolve_training(spec.name, dlrm->defaults(), batch_only);
  CHECK(batch.values.batch == 512);
  CHECK(batch.values.optimizer == optimizer_kind::adam);
  CHECK(batch.values.lr == doctest::Approx(0.003));
  CHECK(batch.values.epochs == 1);
  CHECK(batch.values.table_lr == doctest::Approx(0.1));
  CHECK(batch.values.admit_after == 20);
  CHECK(batch.given == std::vector<std::string>{"batch"});

  // The model's rate is Adam's: another optimizer without a rate runs at its own default.
  training_choices sgd;
  sgd.optimizer = optimizer_kind::sgd;
  auto other = resolve_training(spec.name, dlrm->defaults(), sgd);
  CHECK(other.values.lr == doctest::Approx(default_learning_rate(optimizer_kind::sgd)));
  CHECK(other.values.batch == 256);

  // The tables get the settings' rate and admission; the line says what is in effect.
  auto tables = spec;
  apply_table_settings(recipe, tables);
  REQUIRE(tables.sparse_tables.size() == 1);
  CHECK(tables.sparse_tables[0].config.optimizer.learning_rate == doctest::Approx(0.1));
  CHECK(tables.sparse_tables[0].config.admit_after == 20);
  CHECK(describe(recipe, tables)
        == "model=" + spec.name + " optimizer=adam lr=0.003 batch=256 epochs=1 "
           "table_optimizer=adagrad table_lr=0.1 admit_after=20 (the model's defaults)");

  // The MLP's are the runtime's: momentum at 0.05, batch 64, 5 epochs, no table settings.
  auto mlp = make_model("784-256-128-10");
  auto plain = resolve_training(mlp->spec().name, mlp->defaults(), {});
  CHECK(plain.values.optimizer == optimizer_kind::momentum);
  CHECK(plain.values.lr == doctest::Approx(0.05));
  CHECK(plain.values.momentum == doctest::Approx(0.9));
  CHECK(plain.values.batch == 64);
  CHECK(plain.values.epochs == 5);
  CHECK(plain.values.table_lr == 0);
  CHECK(plain.values.admit_after == -1);
}

/// A generated Criteo-format set, 6 000 training lines and 500 test lines.
struct criteo_set {
  test::scratch_dir dir{"actorps_model_defaults"};
  criteo_set() {
    const auto gen = run_actorps("gen-data criteo --out " + dir.path
                                 + " --rows 6000 --test-rows 500 --seed 5");
    REQUIRE_MESSAGE(gen.status == 0, gen.output);
  }
  std::string data() const {
    return "--dataset criteo:" + dir.path + "/train.tsv --test " + dir.path + "/test.tsv";
  }
};

/// `actorps simulate ARGS --metrics FILE`: its output and the metrics file's start and summary.
struct simulated {
  test::command_result run;
  json start, summary;
};

simulated simulate(const test::scratch_dir& dir, const std::string& args) {
  static int n = 0;
  const auto metrics = dir.path + "/metrics-" + std::to_string(++n) + ".jsonl";
  simulated s;
  s.run = run_actorps("simulate --no-progress " + args + " --metrics " + metrics);
  REQUIRE_MESSAGE(s.run.status == 0, s.run.output);
  auto starts = test::metrics_events(metrics, "start");
  REQUIRE(starts.size() == 1);
  s.start = starts.front();
  s.summary = test::metrics_summary(metrics);
  REQUIRE(!s.summary.is_null());
  return s;
}

/// The "settings: ..." line of a run's output.
std::string settings_line(const std::string& output) {
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(output, m, std::regex("settings: [^\n]*")), output);
  return m.str();
}

TEST_CASE("simulate --model dlrm without training flags trains with the model's recipe") {
  criteo_set set;
  const auto recipe = simulate(set.dir, "--model dlrm " + set.data());
  const auto& start = recipe.start;
  CHECK(start["optimizer"] == "adam");
  CHECK(start["learning_rate"].get<double>() == doctest::Approx(0.003));
  CHECK(start["batch"] == 256);
  CHECK(start["epochs"].get<double>() == 1);
  CHECK(start["table_optimizer"] == "adagrad");
  CHECK(start["table_learning_rate"].get<double>() == doctest::Approx(0.1));
  CHECK(start["admit_after"] == 20);
  CHECK(start["settings_given"].empty());
  // One epoch of batches of 256 over each worker's 3 000 lines: 11 clocks, 2 x 11 x 256 samples.
  CHECK(start["clocks"] == 11);
  CHECK(recipe.summary["samples"] == 2 * 11 * 256);
  const auto line = settings_line(recipe.run.output);
  CHECK(contains(line, "optimizer=adam lr=0.003 batch=256 epochs=1 table_optimizer=adagrad "
                       "table_lr=0.1 admit_after=20 (the model's defaults)"));

  // One flag typed: its field alone changes, and the line says it was given.
  const auto lr = simulate(set.dir, "--model dlrm --lr 0.01 " + set.data());
  CHECK(lr.start["optimizer"] == "adam");
  CHECK(lr.start["learning_rate"].get<double>() == doctest::Approx(0.01));
  CHECK(lr.start["batch"] == 256);
  CHECK(lr.start["epochs"].get<double>() == 1);
  CHECK(lr.start["table_learning_rate"].get<double>() == doctest::Approx(0.1));
  CHECK(lr.start["admit_after"] == 20);
  CHECK(lr.start["settings_given"] == json::array({"lr"}));
  CHECK(contains(settings_line(lr.run.output),
                 "optimizer=adam lr=0.01 batch=256 epochs=1 table_optimizer=adagrad table_lr=0.1 "
                 "admit_after=20 (the model's defaults; given: --lr)"));
}

TEST_CASE("simulate --model dlrm: the model's defaults train as README's recipe typed out") {
  // sync: the same settings give the same model to the last bit.
  criteo_set set;
  const auto defaults = simulate(set.dir, "--model dlrm --mode sync " + set.data());
  const auto typed = simulate(set.dir, "--model dlrm --mode sync --epochs 1 --batch 256 "
                                       "--optimizer adam --lr 0.003 --table-lr 0.1 "
                                       "--admit-after 20 " + set.data());
  const auto other = simulate(set.dir, "--model dlrm --mode sync --admit-after 1 " + set.data());
  CAPTURE(defaults.summary.dump());
  CHECK(defaults.summary["final_test_auc"] == typed.summary["final_test_auc"]);
  CHECK(defaults.summary["final_test_logloss"] == typed.summary["final_test_logloss"]);
  CHECK(defaults.summary["sparse_rows"] == typed.summary["sparse_rows"]);
  // Admission is in effect: with a row for every first push the tables hold many more.
  auto rows = [](const json& summary) {
    uint64_t n = 0;
    for (const auto& shard : summary["sparse_rows"]) n += shard[0].get<uint64_t>();
    return n;
  };
  CHECK(rows(other.summary) > 2 * rows(defaults.summary));
}

TEST_CASE("train() from the library takes the model's defaults under the options it sets") {
  criteo_set set;
  train_options opts;
  opts.model = "dlrm";
  opts.source.what = data_source::kind::criteo;
  opts.source.train_path = set.dir.path + "/train.tsv";
  opts.source.test_path = set.dir.path + "/test.tsv";
  opts.threads = 2;
  opts.batch = 128;  // this one field chosen
  opts.metrics = set.dir.path + "/library.jsonl";
  auto summary = train(opts);
  REQUIRE_MESSAGE(summary, to_string(summary.error()));
  auto starts = test::metrics_events(opts.metrics, "start");
  REQUIRE(starts.size() == 1);
  const auto& start = starts.front();
  CHECK(start["optimizer"] == "adam");
  CHECK(start["learning_rate"].get<double>() == doctest::Approx(0.003));
  CHECK(start["batch"] == 128);
  CHECK(start["epochs"].get<double>() == 1);
  CHECK(start["table_learning_rate"].get<double>() == doctest::Approx(0.1));
  CHECK(start["admit_after"] == 20);
  CHECK(start["settings_given"] == json::array({"batch"}));
  // One epoch of batches of 128 over each worker's 3 000 lines.
  CHECK(summary->clocks == 23);
  CHECK(summary->samples == 2 * 23 * 128);
}

TEST_CASE("simulate with the MLP keeps the runtime's defaults") {
  test::scratch_dir dir("actorps_model_defaults");
  const auto mlp = simulate(dir, "--dataset synthetic --model 784-32-10 --steps 4 "
                                 "--synthetic-rows 2048 --synthetic-test-rows 256");
  CHECK(mlp.start["optimizer"] == "momentum");
  CHECK(mlp.start["learning_rate"].get<double>() == doctest::Approx(0.05));
  CHECK(mlp.start["momentum"].get<double>() == doctest::Approx(0.9));
  CHECK(mlp.start["batch"] == 64);
  CHECK(mlp.start["epochs"].get<double>() == 5);
  CHECK_FALSE(mlp.start.contains("table_learning_rate"));
  CHECK(contains(settings_line(mlp.run.output), "model=mlp:784-32-10 optimizer=momentum lr=0.05 "
                                                "momentum=0.9 batch=64 epochs=5 (the model's "
                                                "defaults)"));
  // A table flag on a model without tables is still refused, naming the flag.
  const auto refused = run_actorps("simulate --dataset synthetic --model 784-32-10 --table-lr 0.1");
  CHECK(refused.status == 2);
  CHECK(contains(refused.output, "--table-lr: --model 784-32-10 has no sparse tables"));
}

} // namespace
} // namespace actorps
