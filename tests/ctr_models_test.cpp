// The CTR plug-ins (lr, dlrm) on Criteo logs: their model strings and specs, the lr step's
// gradient against central differences of its own mean loss, the dlrm step against the kernel
// it wraps (the runtime's de-duplicated rows and inverse index arrive where the kernel wants
// them), a local loop learning toward the generator's best AUC, and whole runs through the
// shards in each consistency mode.
#include "actors/ps/criteo_keys.hpp"
#include "actors/data/criteo_reader.hpp"
#include "actors/data/load_split.hpp"
#include "actors/model/criteo_lr_plugin.hpp"
#include "actors/model/dlrm_plugin.hpp"
#include "actors/ps/model_registry.hpp"
#include "apps/gen_data/planted_criteo.hpp"
#include "kernels/dlrm.hpp"
#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/sparse_loop.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

namespace actorps {

namespace {

std::unique_ptr<trainer> criteo_trainer(const model_plugin& model, const std::string& path,
                                        int batch) {
  trainer_context ctx;
  ctx.batch = batch;
  ctx.source.what = data_source::kind::criteo;
  ctx.source.train_path = path;
  return model.make_trainer(ctx);
}

std::vector<uint64_t> keys_of(trainer& t, int64_t clock) {
  std::vector<std::vector<uint64_t>> named(1);
  t.keys(clock, named);
  return named[0];
}

/// A small generated set, written once per test into `dir`.
planted_criteo_summary small_set(const std::string& dir, int64_t rows, int64_t test_rows) {
  planted_criteo_spec spec;
  spec.rows = rows;
  spec.test_rows = test_rows;
  spec.seed = 2;
  return write_planted_criteo(spec, dir);
}


} // namespace

TEST_CASE("ctr models: model strings, specs and the data they accept") {
  auto lr = make_model("lr")->spec();
  CHECK(lr.name == "lr:ftrl");
  CHECK(invalid_model(lr) == "");
  REQUIRE(lr.tensors.size() == 2);
  CHECK(lr.tensors[0].name == "dense/kernel");
  CHECK(lr.tensors[0].size() == criteo_dense_fields);
  REQUIRE(lr.sparse_tables.size() == 1);
  CHECK(lr.sparse_tables[0].name == "wide");
  CHECK(lr.sparse_tables[0].config.dim == 1);
  CHECK(make_model("lr:adagrad")->spec().sparse_tables[0].config.optimizer.kind
        == row_optimizer_kind::adagrad);
  CHECK_THROWS_WITH_AS(make_model("lr:adam"), doctest::Contains("must be ftrl"), model_error);

  auto d = make_model("dlrm")->spec();
  CHECK(d.name == "dlrm:16:64-32:128-64");
  CHECK(invalid_model(d) == "");
  CHECK(make_model(d.name)->spec().name == d.name);  // the name finds the same model again
  const auto tensors = dlrm_tensors(parse_dlrm_shape("16:64-32:128-64"));
  REQUIRE(d.tensors.size() == tensors.size());
  std::size_t floats = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    CHECK(d.tensors[i].name == tensors[i].first);
    floats += d.tensors[i].size();
  }
  CHECK(floats == dlrm_parameter_count(parse_dlrm_shape("")));
  REQUIRE(d.sparse_tables.size() == 1);
  CHECK(d.sparse_tables[0].name == "embeddings");
  CHECK(d.sparse_tables[0].config.dim == 16);
  CHECK(d.sparse_tables[0].config.optimizer.kind == row_optimizer_kind::adagrad);

  auto small = parse_dlrm_shape("8::4");
  CHECK(small.dim == 8);
  CHECK(small.bottom.empty());
  CHECK(small.top == std::vector<int>{4});
  CHECK(make_model("dlrm:8").get() != nullptr);
  for (const char* bad : {"dlrm:0", "dlrm:x", "dlrm:8:64-x", "dlrm:8:1:2:3", "dlrm:8:64--32"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(make_model(bad), doctest::Contains("dlrm[:DIM[:BOTTOM[:TOP]]]"),
                         model_error);
  }

  for (const char* name : {"lr", "dlrm"}) {
    auto model = make_model(name);
    CHECK(model->check_source(data_source::kind::criteo) == "");
    CHECK(model->check_source(data_source::kind::libsvm).find("criteo:PATH") != std::string::npos);
    CHECK(model->check_source(data_source::kind::fashion_mnist) != "");
    trainer_context not_criteo;
    CHECK_THROWS_WITH(model->make_trainer(not_criteo), doctest::Contains("criteo:PATH"));
    CHECK_THROWS_WITH(model->make_evaluation(std::make_shared<dataset>()),
                      doctest::Contains("criteo:PATH"));
  }
  CHECK(make_model("sparse-lr")->check_source(data_source::kind::criteo) != "");
  CHECK(make_model("784-10")->check_source(data_source::kind::criteo) != "");
}

TEST_CASE("ctr models: the lr step's gradient is the central difference of its mean loss") {
  test::scratch_dir dir("actorps_ctr");
  const auto data = small_set(dir.path, 300, 50);
  auto model = make_model("lr");
  const int batch = 16;
  auto t = criteo_trainer(*model, data.train_path, batch);
  const auto named = keys_of(*t, 0);
  REQUIRE(named.size() == std::size_t(batch) * criteo_categorical_fields);
  for (std::size_t i = 0; i < named.size(); ++i)  // sample by sample, field by field
    CHECK(criteo_field_of(named[i]) == int(i % criteo_categorical_fields));

  sparse_table server(model->spec().sparse_tables[0].config, 1, 0);
  std::vector<table_rows> rows(1);
  test::pull_rows(server, named, rows[0]);
  splitmix64 rng(5);
  for (auto& v : rows[0].values) v = float(rng.next_unit() - 0.5);
  std::vector<float> params(criteo_dense_fields + 1);
  for (auto& p : params) p = float(0.2 * (rng.next_unit() - 0.5));
  std::vector<float> grad(params.size());
  t->step(0, params.data(), grad.data(), rows);
  const auto analytic_rows = rows[0].grads;

  auto mean_loss = [&](const std::vector<float>& values, const std::vector<float>& p) {
    auto probe = rows;
    probe[0].values = values;
    std::fill(probe[0].grads.begin(), probe[0].grads.end(), 0.0f);
    std::vector<float> ignored(p.size());
    auto loss = t->step(0, p.data(), ignored.data(), probe);
    CHECK(loss.rows == batch);
    return loss.loss_sum / double(loss.rows);
  };
  const float h = 1e-2f;
  for (std::size_t k = 0; k < rows[0].keys.size(); k += 7) {  // a sample of the rows
    auto up = rows[0].values, down = rows[0].values;
    up[k] += h;
    down[k] -= h;
    const double numeric = (mean_loss(up, params) - mean_loss(down, params)) / double(up[k] - down[k]);
    CHECK(analytic_rows[k] == doctest::Approx(numeric).epsilon(2e-3).scale(1e-5));
  }
  for (std::size_t j = 0; j < params.size(); ++j) {  // every integer feature's weight, the bias
    CAPTURE(j);
    auto up = params, down = params;
    up[j] += h;
    down[j] -= h;
    const double numeric =
      (mean_loss(rows[0].values, up) - mean_loss(rows[0].values, down)) / double(up[j] - down[j]);
    CHECK(grad[j] == doctest::Approx(numeric).epsilon(2e-3).scale(1e-5));
  }
}

TEST_CASE("ctr models: the dlrm step hands the runtime's rows and inverse index to the kernel") {
  test::scratch_dir dir("actorps_ctr");
  const auto data = small_set(dir.path, 200, 50);
  auto model = make_model("dlrm:4:8:8");
  const auto shape = parse_dlrm_shape("4:8:8");
  const int batch = 32;
  auto t = criteo_trainer(*model, data.train_path, batch);
  const auto named = keys_of(*t, 1);
  sparse_table server(model->spec().sparse_tables[0].config, 1, 0);
  std::vector<table_rows> rows(1);
  test::pull_rows(server, named, rows[0]);
  const auto params = initial_values(model->spec(), 3);
  std::vector<float> grad(params.size());
  auto loss = t->step(1, params.data(), grad.data(), rows);
  CHECK(loss.rows == batch);

  // The kernel, fed by hand: the batch of clock 1 read independently, rows by key.
  criteo_reader reader(data.train_path);
  criteo_batch first, second;
  reader.next_batch(batch, first);
  reader.next_batch(batch, second);
  REQUIRE(second.keys == named);
  std::vector<int32_t> index(named.size());
  for (std::size_t i = 0; i < named.size(); ++i) {
    auto at = std::lower_bound(rows[0].keys.begin(), rows[0].keys.end(), named[i]);
    index[i] = int32_t(at - rows[0].keys.begin());
  }
  auto cpu = make_cpu_backend();
  dlrm direct(*cpu, shape, batch);
  direct.set_parameters(params.data());
  std::vector<float> expected_grad(params.size()), expected_rows(rows[0].values.size());
  auto expected = direct.train_step(second.dense.data(), second.labels.data(),
                                    rows[0].values.data(), int(rows[0].keys.size()), index.data(),
                                    batch, expected_grad.data(), expected_rows.data());
  CHECK(loss.loss_sum == expected.loss_sum);
  CHECK(grad == expected_grad);
  CHECK(rows[0].grads == expected_rows);
}

TEST_CASE("ctr models: a local loop of lr and dlrm learns toward the generator's best AUC") {
  test::scratch_dir dir("actorps_ctr");
  const auto data = small_set(dir.path, 40000, 5000);
  CAPTURE(data.best_test_auc);
  REQUIRE(data.best_test_auc > 0.75);
  data_source src;
  src.what = data_source::kind::criteo;
  src.test_path = data.test_path;
  auto test_split = load_split(src, false);
  REQUIRE(test_split->criteo.rows() == 5000);
  for (const char* name : {"lr", "dlrm:8:16:16"}) {
    CAPTURE(name);
    auto model = make_model(name);
    test::local_sparse_run run(model->spec(), 0.05f);
    auto eval = model->make_evaluation(test_split);
    auto before = run.evaluate(*eval);
    const int batch = 128;
    auto t = criteo_trainer(*model, data.train_path, batch);
    auto trained = run.train(*t, 0, data.positive_rate > 0 ? 40000 / batch : 0);
    CHECK(trained.rows == 40000 / batch * batch);
    auto after = run.evaluate(*eval);
    CAPTURE(before.auc);
    CAPTURE(after.auc);
    CHECK(after.rows == 5000);
    CHECK(after.auc > before.auc + 0.1);
    CHECK(after.auc > data.best_test_auc - 0.08);  // 40 k rows: far from the 2 M-row figures
    CHECK(after.loss < before.loss);
  }
}

TEST_CASE("ctr models train through the shards in every mode, with AUC in the summary") {
  test::scratch_dir dir("actorps_ctr");
  const auto data = small_set(dir.path, 60000, 10000);
  CAPTURE(data.best_test_auc);
  // dlrm admits a value on its 20th push by default: here every value gets its row at once.
  for (const char* run : {"lr --mode sync", "lr --mode async",
                          "dlrm:8:16:16 --admit-after 1 --mode sync",
                          "dlrm:8:16:16 --admit-after 1 --mode ssp --staleness 2",
                          "dlrm:8:16:16 --admit-after 1 --mode async"}) {
    CAPTURE(run);
    auto metrics = dir.path + "/run.jsonl";
    auto r = test::run_actorps("simulate --no-progress --dataset criteo:" + data.train_path
                               + " --test " + data.test_path + " --epochs 1 --batch 128"
                               + " --optimizer adam --lr 0.003 --metrics " + metrics
                               + " --model " + run);
    CAPTURE(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.output.find("final test auc") != std::string::npos);
    auto summary = test::metrics_summary(metrics);
    REQUIRE(summary.contains("final_test_auc"));
    CHECK(summary["final_test_auc"].get<double>() > data.best_test_auc - 0.1);
    CHECK(summary["final_test_logloss"].get<double>() < 0.6);
    uint64_t rows = 0;
    for (const auto& shard : summary["sparse_rows"]) rows += shard[0].get<uint64_t>();
    uint64_t distinct = 0;
    for (auto v : data.distinct_train_values) distinct += uint64_t(v);
    // A row for every (field, value) trained on: one epoch runs whole batches, so the few
    // values seen only in each worker's last, partial batch have none.
    CHECK(rows <= distinct);
    CHECK(rows > distinct * 99 / 100);
  }

  struct refused {
    std::string args, says;
  };
  for (const auto& c : std::vector<refused>{
         {"--model dlrm --dataset criteo:" + data.train_path,
          "--dataset criteo:PATH needs --test PATH"},
         {"--model dlrm --dataset synthetic", "criteo:PATH"},
         {"--model sparse-lr --dataset criteo:" + data.train_path + " --test " + data.test_path,
          "libsvm:PATH"},
         {"--model dlrm:0 --dataset criteo:" + data.train_path + " --test " + data.test_path,
          "dlrm[:DIM[:BOTTOM[:TOP]]]"},
         {"--model lr --dataset criteo:" + dir.path + "/none.tsv --test " + data.test_path,
          dir.path + "/none.tsv"}}) {
    CAPTURE(c.args);
    auto r = test::run_actorps("simulate --no-progress " + c.args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.output.find(c.says) != std::string::npos, r.output);
  }
}

} // namespace actorps
