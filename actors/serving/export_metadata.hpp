// metadata.json of an export: what the model is, how to feed it, how it was trained and how
// well these exact parameters do on the test split. For people and scripts; the model itself
// is in model.capnp and model.onnx.
#pragma once

#include "actors/protocol/model_spec.hpp"
#include "actors/serving/ctr_model.hpp"
#include "actors/serving/exported_model.hpp"
#include "actors/serving/model_evaluation.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace actorps {

inline constexpr const char* metadata_json_name = "metadata.json";

struct program_model;

/// What an export says about the run that produced its parameters.
struct run_info {
  std::string source;    ///< what produced the parameters: "simulate", "chief", ...
  std::string dataset;   ///< what it trained and tests on: "fashion-mnist", "synthetic", "criteo"
  int batch = 0;         ///< rows per worker and clock
  int64_t clocks = 0;    ///< clocks each worker ran
  int64_t samples = 0;   ///< training rows processed by all workers
  double wall_s = 0;     ///< training wall time
  std::string backend;   ///< what the workers computed on
  std::string test_path; ///< the test file, for data read from files (criteo); else empty
  std::string schema_path;  ///< tsv+schema, csv+schema: the schema file (data_source's)
  char delimiter = '\t';    ///< and how the lines are cut
};

/// The JSON text (pretty-printed, ends in a newline). `created` becomes created_utc
/// (ISO 8601, seconds, 'Z').
std::string make_export_metadata(const train_spec& spec, const exported_model& model,
                                 const run_info& run, const model_metrics& test,
                                 std::chrono::system_clock::time_point created);

/// The same for a CTR model: format_version 2, test_auc and test_logloss (test.auc, test.loss),
/// the model string, the input layout (Criteo's fields, their transform and keys, the
/// vocabulary files) and model.onnx's inputs and output.
std::string make_ctr_export_metadata(const train_spec& spec, const ctr_model& model,
                                     const run_info& run, const model_metrics& test,
                                     std::chrono::system_clock::time_point created);

/// The same for a program's model (program_model.hpp): format_version 3, each tensor's name
/// and shape, each table's name, dim and rows; no test figures (actorps cannot run it: the
/// run's own evaluations are in its metrics file).
std::string make_program_export_metadata(const train_spec& spec, const program_model& model,
                                         const run_info& run,
                                         std::chrono::system_clock::time_point created);

/// `metadata` (make_export_metadata's or make_ctr_export_metadata's text) with "sha256": each
/// file's SHA-256 by its name in the version directory ("model.capnp", "vocab/C1.tsv"), in the
/// order given. `actorps predict` and `actorps evaluate` refuse a model.capnp that does not
/// have the digest recorded here.
std::string with_checksums(const std::string& metadata,
                           const std::vector<std::pair<std::string, const std::string*>>& files);

/// The metadata of a delta version of a CTR model (export_chain.hpp): `changed`'s model string
/// and what the delta holds (its rows, `removed` keys, dense parameters), its "chain" (`chain`,
/// chain_json's text), the format of delta.capnp; no test figures (a delta is not evaluated).
std::string make_delta_export_metadata(const ctr_model& changed, std::size_t removed,
                                       const std::string& chain,
                                       std::chrono::system_clock::time_point created);

/// `metadata` with "chain": `chain` (a JSON object's text: export_chain.hpp's chain_json).
std::string with_chain(const std::string& metadata, const std::string& chain);

/// The metadata of a full version folded from a chain (export_chain.hpp): the base's
/// `base_metadata` with the model's figures, `chain` and `created` in place of the base's, and
/// no test figures (they were the base's parameters'; actorps evaluate scores these).
std::string consolidated_metadata(const std::string& base_metadata, const ctr_model& model,
                                  const std::string& chain,
                                  std::chrono::system_clock::time_point created);

/// The SHA-256 metadata.json records for `file` (as with_checksums wrote it), or "" when it
/// records none. Throws std::invalid_argument when `metadata` is not a JSON object.
std::string recorded_sha256(const std::string& metadata, const std::string& file);

} // namespace actorps
