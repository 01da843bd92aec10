// Exporting trained parameters as a versioned model directory, DIR/<version>/:
//   model.capnp    the network and every tensor in our schema (exported_model.hpp; a CTR
//                  model's, with every row of its table: ctr_model_file.hpp)
//   model.onnx     the same network as a standard ONNX graph (onnx_model.hpp, ctr_onnx.hpp)
//   metadata.json  spec, input scaling or layout, training, test metrics (export_metadata.hpp)
//   vocab/C<f>.tsv a CTR model's vocabulary per field (vocab_files.hpp)
// The version appears complete or not at all (versioned_dir.hpp). Only the parameters, the
// spec and what to say about the run are needed, so any source of parameters can export: the
// end of `actorps simulate` / `actorps chief --export-dir DIR`, or a checkpoint.
#pragma once

#include "actors/protocol/model_spec.hpp"
#include "actors/ps/dataset.hpp"
#include "actors/serving/ctr_model.hpp"
#include "actors/serving/export_metadata.hpp"
#include "actors/serving/model_evaluation.hpp"

#include <chrono>
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
  std::size_t vocab_bytes = 0;  ///< CTR models: all vocabulary files together
  double seconds = 0;      ///< building, checking, writing and publishing the files
  std::string model_sha256;  ///< of model.capnp (a delta version's: of delta.capnp)
};

/// What training leaves of a model: its dense tensors, flat in model order, and every row of
/// each of its sparse tables (spec order; none for an MLP).
struct trained_parameters {
  std::vector<float> dense;
  std::vector<gathered_rows> tables;
};

/// Evaluates `params` (flat, mlp layout, for spec.layers) on `test` with evaluate_model,
/// builds the three files (the ONNX graph checked, model.capnp decoded back), writes them into
/// a staged version of `dir` and publishes it. Throws std::invalid_argument when params or the
/// test split do not fit spec.layers, versioned_dir_error when `dir` cannot be written,
/// onnx_model_error when the ONNX checker refuses the graph; nothing stays in `dir` then.
/// `chain`, when not empty, is the version's place in an export chain (export_chain.hpp's
/// chain_json), recorded as metadata.json's "chain".
export_result export_model(const train_spec& spec, const std::vector<float>& params,
                           const run_info& run, const dataset& test, const std::string& dir,
                           const std::string& chain = {});

/// Exports a model of either kind: an MLP (no tables) as export_model above, or a CTR model
/// (lr, dlrm, wdl, deepfm: ctr_kind_of) built by make_ctr_model, evaluated on test.criteo with
/// evaluate_ctr_model, its model.capnp decoded back and model.onnx checked before anything is
/// written. Throws std::invalid_argument when the parameters do not fit the spec, the model is
/// of another kind or the test split holds no Criteo rows; versioned_dir_error and
/// onnx_model_error as export_model; nothing stays in `dir` then.
export_result export_trained_model(const train_spec& spec, const trained_parameters& params,
                                   const run_info& run, const dataset& test,
                                   const std::string& dir, const std::string& chain = {});

/// Writes a version of `dir` holding `model_bytes` as `model_name` and `metadata` as
/// metadata.json (its checksums already in), publishes it, and says what it wrote; `start` is
/// when the version's work began. Throws versioned_dir_error; nothing stays in `dir` then.
export_result write_model_version(const std::string& dir, const std::string& model_name,
                                  const std::string& model_bytes, const std::string& metadata,
                                  std::chrono::steady_clock::time_point start);

/// Writes `model` as a full version of `dir`: model.capnp (decoded back first), model.onnx
/// (checked), vocab/ and `metadata` with the files' checksums (with_checksums). Throws as
/// export_trained_model; nothing stays in `dir` then.
export_result write_ctr_version(const ctr_model& model, const std::string& metadata,
                                const std::string& dir);

} // namespace actorps
