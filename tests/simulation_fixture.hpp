// Small in-process runs on synthetic data for the tests that drive whole simulations, and the
// final parameters of a run as one flat vector.
#pragma once

#include "actors/model/mlp_plugin.hpp"
#include "actors/deploy/simulation.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

namespace actorps::test {

/// A 32-24-10 MLP on 2048 synthetic rows, batch 16, momentum with a cosine schedule.
inline simulation_options synthetic_run(consistency mode, int workers, int shards, int64_t steps,
                                        int staleness = 0) {
  simulation_options opts;
  auto& c = opts.chief;
  c.spec.model = mlp_model({32, 24, 10});
  c.spec.block_floats = 100;
  c.spec.shards = shards;
  c.spec.workers = workers;
  c.spec.mode = mode;
  c.spec.staleness = staleness;
  c.spec.optimizer.kind = optimizer_kind::momentum;
  c.spec.optimizer.learning_rate = 0.05f;
  c.spec.schedule = lr_schedule::cosine;
  c.spec.total_clocks = steps;
  c.spec.seed = 7;
  c.batch = 16;
  c.steps = steps;
  c.eval_every = 10;
  c.progress = false;
  c.train = std::make_shared<dataset>(make_synthetic(2048, 32, 7, true));
  c.test = std::make_shared<dataset>(make_synthetic(512, 32, 7, false));
  opts.scheduler_threads = 2;
  return opts;
}

inline std::vector<float> final_parameters(const run_summary& summary, const train_spec& spec) {
  block_layout layout(spec);
  std::vector<float> flat(layout.total_floats(), std::nanf(""));
  for (const auto& snap : summary.final_parameters) {
    auto ok = scatter_shard_parameters(wire_buffer{snap}, layout, flat.data());
    REQUIRE(ok);
  }
  return flat;
}

} // namespace actorps::test
