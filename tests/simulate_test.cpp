// The single-process cluster end to end on synthetic data: sync mode is exact, the staleness
// bound holds under a straggler (as the workers themselves saw it), and the summary reports
// what happened.
#include "actors/chief/metrics.hpp"
#include "actors/model/mlp_plugin.hpp"
#include "actors/deploy/simulation.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/simulation_fixture.hpp"
#include "kernels/mlp.hpp"
#include "kernels/parameter_init.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

using namespace actorps;
using actorps::test::final_parameters;
using actorps::test::scratch_dir;
using actorps::test::synthetic_run;

namespace {

/// The `train` events of a metrics file: each worker's own account of one clock.
std::vector<nlohmann::json> train_events(const std::string& path) {
  return test::metrics_events(path, "train");
}

} // namespace


TEST_CASE("sync mode equals a plain loop applying the mean of the workers' gradients") {
  constexpr int workers = 3;
  constexpr int64_t clocks = 25;
  auto opts = synthetic_run(consistency::sync, workers, 2, clocks);
  auto spec = opts.chief.spec;
  auto train = opts.chief.train;
  auto batch = opts.chief.batch;
  auto result = simulate(opts);
  REQUIRE(result);
  auto got = final_parameters(*result, spec);

  // The reference: one process, no actors, the same minibatches and the same update rule.
  auto be = make_cpu_backend();
  const auto layers = *mlp_layers(spec.model);  // the reference builds its own MLP
  mlp model(*be, layers, batch);
  auto params = initial_parameters(layers, spec.seed);
  std::vector<float> state(optimizer_state_slots(spec.optimizer.kind) * params.size(), 0.0f);
  std::vector<std::vector<float>> grads(workers, std::vector<float>(params.size()));
  std::vector<float> mean(params.size()), x(std::size_t(batch) * layers[0]);
  std::vector<int32_t> y(batch);
  std::vector<data_shard> shards;
  for (int w = 0; w < workers; ++w) shards.emplace_back(train, w, workers, batch, spec.seed);
  for (int64_t c = 0; c < clocks; ++c) {
    model.set_parameters(params.data());
    for (int w = 0; w < workers; ++w) {
      shards[w].fill_batch(c, x.data(), y.data());
      model.train_step(x.data(), y.data(), batch, grads[w].data());
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      float sum = grads[0][i];
      for (int w = 1; w < workers; ++w) sum += grads[w][i];
      mean[i] = sum * (1.0f / workers);
    }
    auto lr = scheduled_learning_rate(spec.schedule, spec.optimizer.learning_rate, c, clocks);
    apply_update(spec.optimizer, lr, c + 1, params.data(), mean.data(), state.data(), params.size());
  }
  REQUIRE(got.size() == params.size());
  double max_diff = 0;
  for (std::size_t i = 0; i < params.size(); ++i)
    max_diff = std::max(max_diff, double(std::fabs(got[i] - params[i])));
  MESSAGE("max |sync - reference| = " << max_diff);
  CHECK(max_diff <= 1e-5);
  CHECK(params != initial_parameters(layers, spec.seed));  // training moved them
  CHECK(result->max_staleness == 0);
  for (const auto& s : result->shard_stats_list) CHECK(s.updates == uint64_t(clocks));
}

TEST_CASE("with a straggler, ssp never exceeds its bound and async runs ahead of it") {
  // The bound is checked by an independent observer: the workers' own train events in the
  // metrics file (the staleness of the parameters each one computed with). The shards' report
  // of themselves is a second check.
  struct expectation {
    consistency mode;
    int staleness;
  };
  constexpr int workers = 4;
  constexpr int64_t clocks = 30;
  for (auto e : {expectation{consistency::ssp, 0}, expectation{consistency::ssp, 2},
                 expectation{consistency::async, 0}}) {
    CAPTURE(to_string(e.mode));
    CAPTURE(e.staleness);
    scratch_dir dir("actorps_staleness");
    auto opts = synthetic_run(e.mode, workers, 2, clocks, e.staleness);
    opts.chief.slow_ms = {0, 20, 0, 0};
    opts.chief.eval_every = 0;
    auto metrics = std::make_shared<metrics_file>(dir.path + "/run.jsonl");
    opts.chief.metrics = metrics;
    auto result = simulate(opts);
    REQUIRE(result);
    metrics->flush();

    std::vector<int64_t> seen(workers, 0), worst(workers, -1);
    for (const auto& t : train_events(dir.path + "/run.jsonl")) {
      auto w = t["worker"].get<int>();
      REQUIRE(w >= 0);
      REQUIRE(w < workers);
      ++seen[w];
      worst[w] = std::max(worst[w], t["staleness"].get<int64_t>());
    }
    for (int w = 0; w < workers; ++w) {
      CAPTURE(w);
      CHECK(seen[w] == clocks);  // the observer saw every clock of every worker
    }
    auto observed = *std::max_element(worst.begin(), worst.end());
    MESSAGE("max staleness the workers saw: " << observed);
    int64_t held = 0;
    for (const auto& s : result->shard_stats_list) held += int64_t(s.pulls_held);
    if (e.mode == consistency::async) {
      CHECK(observed > 2);  // the fast workers ran ahead of the straggler
      CHECK(result->staleness_bound == -1);
      CHECK(result->max_staleness > 2);
      CHECK(held == 0);
    } else {
      for (int w = 0; w < workers; ++w) {
        CAPTURE(w);
        CHECK(worst[w] <= e.staleness);
      }
      CHECK(observed == e.staleness);  // the straggler makes the bound bind
      CHECK(result->staleness_bound == e.staleness);
      CHECK(result->max_staleness <= e.staleness);
      CHECK(result->max_staleness == e.staleness);
      CHECK(held > 0);
    }
  }
}

TEST_CASE("a synthetic run trains, evaluates and accounts for every sample") {
  auto opts = synthetic_run(consistency::ssp, 2, 3, 150, 1);
  auto result = simulate(opts);
  REQUIRE(result);
  CHECK(result->mode == "ssp");
  CHECK(result->workers == 2);
  CHECK(result->shards == 3);
  CHECK(result->clocks == 150);
  CHECK(result->samples == 2 * 150 * 16);
  CHECK(result->dropped_messages == 0);
  CHECK(result->samples_per_s > 0);
  CHECK(result->final_test_accuracy > 0.9);
  CHECK(result->final_parameters.size() == 3);
  REQUIRE(result->shard_stats_list.size() == 3);
  for (const auto& s : result->shard_stats_list) CHECK(s.pushes == 2 * 150);
}

TEST_CASE("train events name the newest update the worker's parameters included") {
  for (auto mode : {consistency::sync, consistency::ssp}) {
    CAPTURE(to_string(mode));
    constexpr int staleness = 2;
    actorps::test::scratch_dir tmp;
    auto file = (std::filesystem::path(tmp.path) / "run.jsonl").string();
    auto opts = synthetic_run(mode, 4, 2, 30, staleness);
    opts.chief.slow_ms = {0, 20, 0, 0};  // in ssp the others run ahead of worker 1
    opts.chief.eval_every = 0;
    opts.chief.metrics = std::make_shared<metrics_file>(file);
    REQUIRE(simulate(std::move(opts)));  // the metrics file is closed with the run
    auto events = train_events(file);
    REQUIRE(events.size() == 4 * 30);
    int ahead = 0;  // events whose parameters included a push of their own clock or later
    for (const auto& e : events) {
      auto clock = e["clock"].get<int64_t>(), newest = e["newest_clock"].get<int64_t>();
      CAPTURE(e.dump());
      if (mode == consistency::sync) {
        CHECK(newest <= clock);
        CHECK(newest == clock - 1);  // the mean of the previous clock, nothing newer
      } else {
        // served once min >= clock - s, so every worker's push of clock - s - 1 is in; no
        // worker can have pushed past min + s <= clock + s
        CHECK(newest >= clock - staleness - 1);
        CHECK(newest <= clock + staleness);
      }
      ahead += newest >= clock;
    }
    if (mode == consistency::ssp) CHECK(ahead > 0);  // the straggler saw the others' later pushes
  }
}
