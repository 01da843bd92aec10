// The wdl and deepfm plug-ins on Criteo logs: their model strings, specs (two tables) and
// recipes, the step handing the runtime's rows of both tables to the kernel, and runs in one
// process with nothing but --model, --dataset and --test, scored by the run's own metrics file.
#include "actors/data/criteo_batches.hpp"
#include "actors/ps/criteo_keys.hpp"
#include "actors/ps/model_registry.hpp"
#include "actors/model/wide_deep_plugin.hpp"
#include "apps/gen_data/planted_criteo.hpp"
#include "kernels/wide_deep.hpp"
#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace actorps {

TEST_CASE("wdl and deepfm: model strings, specs with two tables, recipes, data they accept") {
  for (bool fm : {false, true}) {
    const std::string name = fm ? "deepfm" : "wdl";
    CAPTURE(name);
    auto model = make_model(name);
    const auto spec = model->spec();
    CHECK(spec.name == name + ":16:256-128");
    CHECK(invalid_model(spec) == "");
    CHECK(make_model(spec.name)->spec().name == spec.name);  // the name finds it again
    const auto shape = parse_wide_deep_shape("", fm);
    const auto tensors = wide_deep_tensors(shape);
    REQUIRE(spec.tensors.size() == tensors.size());
    std::size_t floats = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      CHECK(spec.tensors[i].name == tensors[i].first);
      floats += spec.tensors[i].size();
    }
    CHECK(floats == wide_deep_parameter_count(shape));
    CHECK(spec.tensors[0].name == "linear/kernel");
    CHECK(spec.tensors[0].init == tensor_init::zeros);
    REQUIRE(spec.sparse_tables.size() == 2);
    CHECK(spec.sparse_tables[0].name == "embeddings");
    CHECK(spec.sparse_tables[0].config.dim == 16);
    CHECK(spec.sparse_tables[1].name == "wide");
    CHECK(spec.sparse_tables[1].config.dim == 1);
    CHECK(spec.sparse_tables[1].config.init == row_init::zeros);

    const auto recipe = model->defaults();  // dlrm's, but for wdl's tables' rates
    CHECK(recipe.optimizer == optimizer_kind::adam);
    CHECK(recipe.lr == doctest::Approx(0.003));
    CHECK(recipe.batch == 256);
    CHECK(recipe.epochs == 1);
    CHECK(recipe.admit_after == 20);
    // deepfm: both tables at 0.1; wdl: each its own, the embeddings' ten times the weights'
    CHECK(recipe.table_lr == (fm ? doctest::Approx(0.1) : doctest::Approx(0)));
    CHECK(spec.sparse_tables[0].config.optimizer.learning_rate
          == doctest::Approx(fm ? 0.1 : 1.0));
    CHECK(spec.sparse_tables[1].config.optimizer.learning_rate == doctest::Approx(0.1));

    const auto small = parse_wide_deep_shape("8:32", fm);
    CHECK(small.dim == 8);
    CHECK(small.hidden == std::vector<int>{32});
    CHECK(small.fm == fm);
    CHECK(parse_wide_deep_shape("4:", fm).hidden.empty());
    for (const std::string bad : {":0", ":x", ":8:64-x", ":8:1:2", ":8:64--32", ":8:0"}) {
      CAPTURE(bad);
      const auto form = name + "[:DIM[:HIDDEN]]";
      CHECK_THROWS_WITH_AS(make_model(name + bad), doctest::Contains(form.c_str()), model_error);
    }
    CHECK(model->check_source(data_source::kind::criteo) == "");
    CHECK(model->check_source(data_source::kind::libsvm).find("criteo:PATH") != std::string::npos);
    trainer_context not_criteo;
    CHECK_THROWS_WITH(model->make_trainer(not_criteo), doctest::Contains("criteo:PATH"));
  }
  const auto names = registered_models();
  CHECK(std::count(names.begin(), names.end(), "wdl") == 1);
  CHECK(std::count(names.begin(), names.end(), "deepfm") == 1);
}

TEST_CASE("wdl and deepfm: the step hands both tables' rows and inverse index to the kernel") {
  test::scratch_dir dir("actorps_wide_deep");
  planted_criteo_spec gen;
  gen.rows = 300;
  gen.test_rows = 10;
  gen.seed = 4;
  const auto data = write_planted_criteo(gen, dir.path);
  for (bool fm : {false, true}) {
    CAPTURE(fm);
    auto model = make_model(fm ? "deepfm:4:6" : "wdl:4:6");
    trainer_context ctx;
    ctx.batch = 16;
    ctx.source.what = data_source::kind::criteo;
    ctx.source.train_path = data.train_path;
    auto t = model->make_trainer(ctx);
    std::vector<std::vector<uint64_t>> named(2);
    t->keys(0, named);
    REQUIRE(named[0].size() == 16u * criteo_categorical_fields);
    CHECK(named[1] == named[0]);
    // The runtime's view: each table's distinct keys ascending, the inverse index, rows.
    const auto shape = parse_wide_deep_shape("4:6", fm);
    std::vector<table_rows> tables(2);
    for (int k = 0; k < 2; ++k) {
      auto& tr = tables[k];
      tr.dim = k == 0 ? 4 : 1;
      tr.keys = named[k];
      std::sort(tr.keys.begin(), tr.keys.end());
      tr.keys.erase(std::unique(tr.keys.begin(), tr.keys.end()), tr.keys.end());
      for (auto key : named[k])
        tr.inverse.push_back(uint32_t(std::lower_bound(tr.keys.begin(), tr.keys.end(), key)
                                      - tr.keys.begin()));
      tr.values.resize(tr.keys.size() * tr.dim);
      for (std::size_t i = 0; i < tr.values.size(); ++i)
        tr.values[i] = float(std::sin(0.37 * double(i) + k));
      tr.grads.assign(tr.values.size(), 0.0f);
    }
    std::vector<float> params(wide_deep_parameter_count(shape));
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = float(0.2 * std::cos(double(i)));
    std::vector<float> grad(params.size(), NAN);
    const auto loss = t->step(0, params.data(), grad.data(), tables);
    CHECK(loss.rows == 16);

    // The kernel itself on the same batch (read here again) and rows: the same numbers.
    criteo_batches lines(data.train_path, 0, 1, 16);
    const auto& b = lines.at(0);
    REQUIRE(b.keys == named[0]);
    auto be = make_cpu_backend();
    wide_deep net(*be, shape, 16);
    net.set_parameters(params.data());
    auto rows_of = [](const table_rows& tr) {
      return ctr_rows{tr.values.data(), int(tr.keys.size()),
                      reinterpret_cast<const int32_t*>(tr.inverse.data())};
    };
    std::vector<float> want(params.size()), want_rows(tables[0].values.size()),
      want_weights(tables[1].values.size());
    const auto stats = net.train_step(b.dense.data(), b.labels.data(), rows_of(tables[0]),
                                      rows_of(tables[1]), 16, want.data(), want_rows.data(),
                                      want_weights.data());
    CHECK(loss.loss_sum == stats.loss_sum);
    CHECK(grad == want);
    CHECK(tables[0].grads == want_rows);
    CHECK(tables[1].grads == want_weights);
    CHECK(std::any_of(want_rows.begin(), want_rows.end(), [](float v) { return v != 0.0f; }));
    CHECK(std::any_of(want_weights.begin(), want_weights.end(), [](float v) { return v != 0.0f; }));

    // A table of the wrong width, or one table only, is refused before any computing.
    auto narrow = tables;
    narrow[1].dim = 2;
    CHECK_THROWS_AS(t->step(0, params.data(), grad.data(), narrow), std::logic_error);
    std::vector<table_rows> one(tables.begin(), tables.begin() + 1);
    CHECK_THROWS_AS(t->step(0, params.data(), grad.data(), one), std::logic_error);
  }
}

} // namespace actorps

namespace actorps {

TEST_CASE("wdl and deepfm train in one process on their defaults alone, AUC near the best") {
  test::scratch_dir dir("actorps_wide_deep_run");
  planted_criteo_spec gen;
  gen.rows = 100000;
  gen.test_rows = 10000;
  gen.seed = 2;
  const auto data = write_planted_criteo(gen, dir.path);
  CAPTURE(data.best_test_auc);
  for (const char* model : {"wdl", "deepfm"}) {
    CAPTURE(model);
    const auto metrics = dir.path + "/" + model + ".jsonl";
    // Nothing but the model, the data and where the metrics go: the model's recipe holds.
    const auto r = test::run_actorps("simulate --no-progress --model " + std::string(model)
                                     + " --dataset criteo:" + data.train_path + " --test "
                                     + data.test_path + " --metrics " + metrics);
    CAPTURE(r.output);
    REQUIRE(r.status == 0);
    CHECK(test::contains(r.output, "batch=256 epochs=1"));
    const auto start = test::metrics_events(metrics, "start").at(0);
    CHECK(start["settings_given"].empty());
    const auto summary = test::metrics_summary(metrics);
    REQUIRE(summary.contains("final_test_auc"));
    const double auc = summary["final_test_auc"].get<double>();
    CAPTURE(auc);
    // 100 000 rows, admission at 20: 0.7806 (wdl) and 0.7754 (deepfm) of the best 0.8033
    CHECK(auc > data.best_test_auc - 0.04);
    CHECK(summary["final_test_logloss"].get<double>() < 0.55);
    // Both tables hold rows on the shards: one per admitted value each.
    for (const auto& shard : summary["sparse_rows"]) {
      REQUIRE(shard.size() == 2);
      CHECK(shard[0].get<uint64_t>() > 0);
      CHECK(shard[0] == shard[1]);  // the same keys, admitted alike
    }
  }
}

} // namespace actorps
