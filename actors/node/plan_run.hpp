// The chief's configuration of a runtime-owned run from the front door's options, shared by
// train() (all roles in this process) and train_cluster() (the chief of a TF_CONFIG cluster).
// Private to actors/node.
#pragma once

#include "actors/deploy/simulation.hpp"
#include "actors/ps.hpp"

namespace actorps::detail {

/// Validates `o` against the data's shape (rows of the training split, feature columns,
/// classes) and the model plug-in it names; the run's chief configuration, or invalid_spec
/// naming what is wrong. The data itself is the caller's to attach.
caf::expected<simulation_options> plan_run(const train_options& o, int64_t train_rows, int cols,
                                           int classes);

} // namespace actorps::detail
