// Loads what a data_source describes, on the host that trains or evaluates on it.
#pragma once

#include "actors/data/dataset.hpp"
#include "actors/protocol/data_source.hpp"

#include <memory>

namespace actorps {

/// Loads the training (or test) split; throws dataset_error naming the file on bad data. A
/// libsvm training split is only counted (rows set, no data): its workers stream their parts.
std::shared_ptr<const dataset> load_split(const data_source& src, bool train);

/// The rows of the training split really there (epochs count them); throws dataset_error.
int64_t training_rows(const data_source& src);

} // namespace actorps
