// The evaluator: on (eval, clock) it takes a snapshot of every shard (served at once, never held
// by the consistency rule), runs the test set through its own model replica and answers with
// test accuracy and loss. Spawned detached, so the forward pass never stalls the scheduler;
// the chief keeps at most one evaluation in flight, so training never waits for it.
#pragma once

#include "actors/protocol/messages.hpp"
#include "actors/ps/dataset.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace actorps {

struct evaluator_config {
  train_spec spec;
  std::shared_ptr<const dataset> test;
  std::vector<ps_shard_actor> shards;
  std::chrono::milliseconds request_timeout{std::chrono::seconds(60)};
};

evaluator_actor spawn_evaluator(caf::actor_system& sys, evaluator_config cfg);

} // namespace actorps
