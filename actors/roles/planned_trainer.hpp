// A worker's trainer once its data is a plan of other workers' parts (data_plan.hpp: the number
// of workers changed while the run trained). Each segment of the plan gets a trainer of the
// model's plug-in of its own, made as worker `part` of `parts` would make it, so it reads that
// part's minibatches whatever the format; made when the plan reaches the segment, dropped once
// the plan has passed it.
#pragma once

#include "actors/protocol/data_plan.hpp"
#include "actors/ps/batch_source.hpp"
#include "actors/ps/model_plugin.hpp"

#include <functional>
#include <memory>

namespace actorps {

/// One part's trainer and the minibatches it reads (null where the plug-in streams its own).
struct part_trainer {
  std::unique_ptr<batch_source> data;  // declared first: the trainer may point into it
  std::unique_ptr<trainer> model;
};

/// Makes the trainer worker `part` of `parts` would have.
using part_trainer_factory = std::function<part_trainer(int32_t part, int32_t parts)>;

/// A trainer whose minibatch i is the plan's minibatch i (plan_batches(plan) of them). Makes
/// the first segment's trainer now, so that a part it cannot read is found when the worker
/// starts.
std::unique_ptr<trainer> make_planned_trainer(data_plan plan, part_trainer_factory make);

} // namespace actorps
