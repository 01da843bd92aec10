// The runtime's worker overlaps its step with its push where the mode allows staleness (ssp with
// a bound >= 1, async) and it trains alone: clock c + 1 computed on the parameters pulled for c
// while the push of c is in flight. With more workers it waits for every reply. The observer is the workers' own train events in the metrics file: the
// staleness of the parameters each clock was computed with.
#include "actors/chief/metrics.hpp"
#include "actors/deploy/simulation.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/simulation_fixture.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

using namespace actorps;
using actorps::test::scratch_dir;
using actorps::test::synthetic_run;

namespace {

/// Per worker, the staleness of each clock as the worker's train event says (clock → staleness).
struct observed_run {
  std::vector<std::map<int64_t, int64_t>> staleness;
  double accuracy = 0;
  std::vector<float> params;  // final, flat
};

observed_run run_observed(simulation_options opts) {
  scratch_dir dir("actorps_overlap");
  auto metrics = std::make_shared<metrics_file>(dir.path + "/run.jsonl");
  opts.chief.metrics = metrics;
  observed_run out;
  out.staleness.resize(opts.chief.spec.workers);
  auto result = simulate(opts);
  REQUIRE(result);
  metrics->flush();
  out.accuracy = result->final_test_accuracy;
  out.params = test::final_parameters(*result, opts.chief.spec);
  for (const auto& t : test::metrics_events(dir.path + "/run.jsonl", "train")) {
    auto w = t["worker"].get<int>();
    REQUIRE(w >= 0);
    REQUIRE(w < opts.chief.spec.workers);
    out.staleness[w][t["clock"].get<int64_t>()] = t["staleness"].get<int64_t>();
  }
  return out;
}

} // namespace

TEST_CASE("one worker computes each clock while its push is in flight where staleness is allowed") {
  // Alone, a worker's pulls are never stale: staleness 1 is its step running one clock ahead
  // of its last reply, 0 that it waited for it. Computing ahead, it foresees the step its own
  // push is about to take (momentum and sgd), so it trains as the loop that waits: its final
  // parameters are sync's to float rounding.
  auto reference = run_observed(synthetic_run(consistency::sync, 1, 2, 40)).params;
  struct expectation {
    consistency mode;
    int staleness;
    int64_t ahead;  // the staleness of every clock after the first
  };
  constexpr int64_t clocks = 40;
  for (auto e : {expectation{consistency::ssp, 1, 1}, expectation{consistency::ssp, 2, 1},
                 expectation{consistency::async, 0, 1}, expectation{consistency::ssp, 0, 0},
                 expectation{consistency::sync, 0, 0}}) {
    CAPTURE(to_string(e.mode));
    CAPTURE(e.staleness);
    auto opts = synthetic_run(e.mode, 1, 2, clocks, e.staleness);
    opts.chief.eval_every = 0;
    auto run = run_observed(opts);
    const auto& seen = run.staleness[0];
    REQUIRE(seen.size() == std::size_t(clocks));  // every clock reported
    CHECK(seen.at(0) == 0);
    for (int64_t c = 1; c < clocks; ++c) {
      CAPTURE(c);
      CHECK(seen.at(c) == e.ahead);
    }
    REQUIRE(run.params.size() == reference.size());
    double max_diff = 0;
    for (std::size_t i = 0; i < reference.size(); ++i)
      max_diff = std::max(max_diff, double(std::fabs(run.params[i] - reference[i])));
    MESSAGE("max |overlapped - sync| = " << max_diff);
    CHECK(max_diff <= 1e-5);
    CHECK(run.accuracy > 0.85);
  }
}

TEST_CASE("workers with a straggler never exceed the ssp bound and compute nothing ahead") {
  constexpr int workers = 4;
  constexpr int64_t clocks = 30;
  for (int s : {1, 2}) {
    CAPTURE(s);
    auto opts = synthetic_run(consistency::ssp, workers, 2, clocks, s);
    opts.chief.slow_ms = {0, 20, 0, 0};
    opts.chief.eval_every = 0;
    auto run = run_observed(opts);
    int64_t worst = 0, ahead = 0;
    for (int w = 0; w < workers; ++w) {
      CAPTURE(w);
      CHECK(run.staleness[w].size() == std::size_t(clocks));
      for (auto [c, staleness] : run.staleness[w]) {
        CAPTURE(c);
        CHECK(staleness <= s);
        worst = std::max(worst, staleness);
      }
    }
    // The straggler is the min clock: what it waited for is current, so any staleness of its
    // own would be a clock computed ahead of its push's reply, which only a worker alone does.
    for (auto [c, staleness] : run.staleness[1]) ahead += staleness > 0 ? 1 : 0;
    MESSAGE("s " << s << ": max staleness " << worst << ", straggler ahead " << ahead);
    CHECK(worst == s);  // the straggler makes the bound bind
    CHECK(ahead == 0);
  }
}
