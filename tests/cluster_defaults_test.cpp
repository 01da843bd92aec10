// The run's defaults for a loop of the user's own (ps.hpp, schedule_or_default): cluster_options
// left as they are is ssp with a staleness bound of 2, as train_options; the schedule is cosine
// over total_clocks when given, constant when not; the optimizer, unset, is momentum at its
// default rate.
#include "actors/ps.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace actorps {

namespace {

model_spec one_float() { return {"one", {{"w", {1}, tensor_init::zeros, 0}}, {}}; }

/// What one worker's SGD steps (rate 0.1, gradient 1) move the parameter by at clocks 0..3.
std::vector<float> moves(cluster_options opts) {
  opts.ps = 1;
  opts.workers = 1;
  opts.optimizer = optimizer_config{optimizer_kind::sgd, 0.1f};
  local_cluster ps(one_float(), opts);
  auto client = ps.worker(0);
  float w = 0, grad = 1;
  REQUIRE(client.wait(client.pull(0, &w)));
  std::vector<float> out;
  for (int64_t clock = 0; clock < 4; ++clock) {
    const float before = w;
    REQUIRE(client.wait(client.push_pull(clock, &grad, &w)));
    out.push_back(before - w);
  }
  return out;
}

} // namespace

TEST_CASE("cluster_options left alone: ssp with staleness 2, as train_options") {
  const cluster_options defaults;
  const train_options run;
  CHECK(defaults.mode == run.mode);
  CHECK(defaults.staleness == run.staleness);
  CHECK(defaults.mode == consistency::ssp);
  CHECK(defaults.staleness == 2);
  // Observed: worker 0 runs two clocks ahead of a worker 1 that never pushes (sync would hold
  // its first push_pull until worker 1's push of clock 0 came).
  cluster_options opts;
  opts.ps = 1;
  opts.workers = 2;
  opts.timeout = std::chrono::seconds(5);
  local_cluster ps(one_float(), opts);
  auto client = ps.worker(0);
  float w = 0, grad = 1;
  REQUIRE(client.wait(client.pull(0, &w)));
  auto first = client.wait(client.push_pull(0, &grad, &w));
  REQUIRE(first);
  CHECK(*first == 1);
  auto second = client.wait(client.push_pull(1, &grad, &w));
  REQUIRE(second);
  CHECK(*second == 2);
}

TEST_CASE("the schedule left unset: cosine over total_clocks when given, else constant") {
  CHECK(schedule_or_default(std::nullopt, 100) == lr_schedule::cosine);
  CHECK(schedule_or_default(std::nullopt, 0) == lr_schedule::constant);
  CHECK(schedule_or_default(lr_schedule::linear, 0) == lr_schedule::linear);
  CHECK(schedule_or_default(lr_schedule::constant, 100) == lr_schedule::constant);

  for (float m : moves({})) CHECK(m == doctest::Approx(0.1f));
  cluster_options known;
  known.total_clocks = 4;
  // 0.1 · (0.05 + 0.95 · (1 + cos(π c / 4)) / 2): down to 5 % of the rate at the end
  const std::vector<double> cosine = {0.1, 0.0860876, 0.0525, 0.0189124};
  const auto decayed = moves(known);
  for (int c = 0; c < 4; ++c) CHECK(decayed[c] == doctest::Approx(cosine[c]).epsilon(1e-4));
  known.schedule = lr_schedule::constant;
  for (float m : moves(known)) CHECK(m == doctest::Approx(0.1f));
}

TEST_CASE("cluster_options without an optimizer: momentum 0.9 at its default rate, 0.05") {
  const cluster_options defaults;
  CHECK_FALSE(defaults.optimizer.has_value());
  CHECK(default_learning_rate(optimizer_kind::momentum) == doctest::Approx(0.05f));
  cluster_options opts;
  opts.ps = 1;
  opts.workers = 1;
  opts.schedule = lr_schedule::constant;
  local_cluster ps(one_float(), opts);
  auto client = ps.worker(0);
  float w = 0, grad = 1;
  REQUIRE(client.wait(client.pull(0, &w)));
  // velocity 1, then 0.9 + 1 = 1.9: the parameter moves by 0.05, then by 0.05 · 1.9 (SGD at
  // 0.05 would move it by 0.05 twice; at sgd's own default, 0.1)
  REQUIRE(client.wait(client.push_pull(0, &grad, &w)));
  CHECK(w == doctest::Approx(-0.05f));
  REQUIRE(client.wait(client.push_pull(1, &grad, &w)));
  CHECK(w == doctest::Approx(-0.05f - 0.095f));
}

} // namespace actorps
