// Exporting trained parameters as a versioned model directory, DIR/<version>/:
//   model.capnp    the network and every tensor in our schema (exported_model.hpp)
//   model.onnx     the same network as a standard ONNX graph (onnx_model.hpp)
//   metadata.json  spec, input scaling, training, test accuracy and loss (export_metadata.hpp)
// The version appears complete or not at all (versioned_dir.hpp). Only the parameters, the
// spec and what to say about the run are needed, so any source of parameters can export: the
// end of `actorps simulate` / `actorps chief --export-dir DIR`, or a checkpoint.
#pragma once

#include "actors/data/dataset.hpp"
#include "actors/protocol/model_spec.hpp"
#include "apps/export/export_metadata.hpp"
#include "apps/export/model_evaluation.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// The input divisor of a model trained on `dataset`: pixel_divisor for "fashion-mnist"
/// (uint8 pixels), 1 for anything else (features used as they are).
float input_divisor_for(const std::string& dataset);

struct export_result {
  std::string path;        ///< dir/<version>
  uint64_t version = 0;
  model_metrics test;      ///< the exported parameters on the test split (as in metadata.json)
  std::size_t capnp_bytes = 0, onnx_bytes = 0, metadata_bytes = 0;
};

/// Evaluates `params` (flat, mlp layout, for spec.layers) on `test` with evaluate_model,
/// builds the three files (the ONNX graph checked, model.capnp decoded back), writes them into
/// a staged version of `dir` and publishes it. Throws std::invalid_argument when params or the
/// test split do not fit spec.layers, versioned_dir_error when `dir` cannot be written,
/// onnx_model_error when the ONNX checker refuses the graph; nothing stays in `dir` then.
export_result export_model(const train_spec& spec, const std::vector<float>& params,
                           const run_info& run, const dataset& test, const std::string& dir);

} // namespace actorps
