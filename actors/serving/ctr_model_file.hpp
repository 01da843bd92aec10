// model.capnp of a CTR model: format 2 of schema/model_export.capnp (ExportedModel with its
// CtrModel, the dense tensors whole and named, and every row of the sparse table with its key).
// served_model.hpp reads it back (model_readers.hpp's read_ctr_model).
#pragma once

#include "actors/serving/ctr_model.hpp"

#include <string>

namespace actorps {

/// The ExportedModel message of `model` (flat-array form). Throws std::invalid_argument when
/// its dense parameters or field rows do not fit its sizes.
std::string encode_ctr_model(const ctr_model& model);

} // namespace actorps
