// The checkpoint side of a run's plan: which checkpoint it continues (--resume DIR, or --resume
// auto: the newest valid one of this run in --checkpoint-dir, else a fresh start), which run
// it is (its id: new, or the resumed checkpoint's), and what --checkpoint-dir may hold
// (another run's checkpoints are refused, or moved aside with --overwrite-checkpoints).
#pragma once

#include "actors/node/training_plan.hpp"

#include <string>

namespace actorps {

/// What a dataset is, as checkpoints record it: its kind and the absolute path of its files
/// ("synthetic" alone: its size and seed are recorded beside it).
std::string dataset_identity(const data_source& data);

/// Decides and checks the above after the run's length is known, saying on stdout what it
/// chose; sets the plan's checkpoint resume, run id and dataset. Throws usage_error naming the
/// flag: a checkpoint of another run or at or past the run's end, a directory holding another
/// run's checkpoints.
void plan_checkpoints(const training_flags& flags, training_plan& plan);

} // namespace actorps
