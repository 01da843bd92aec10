// A model trained by a program of its own (actorps.torch.train: an nn.Module's tensors and its
// EmbeddingBag tables), exported as model.capnp format 3: each tensor by name and shape, every
// row of each table. actorps knows no network for it, so its program serves it
// (actorps.torch.load_export); `actorps predict` and `evaluate` refuse it, saying so.
#pragma once

#include "actors/protocol/model_spec.hpp"
#include "actors/serving/ctr_model.hpp"
#include "actors/serving/export_metadata.hpp"
#include "actors/serving/model_export.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

inline constexpr uint32_t program_format_version = 3;  ///< ExportedModel of a program's model

struct program_tensor {
  std::string name;
  std::vector<uint32_t> shape;
  std::vector<float> values;  ///< the product of shape, row-major
};

struct program_table {
  std::string name;
  uint32_t dim = 0;
  std::vector<uint64_t> keys;  ///< strictly ascending
  std::vector<float> values;   ///< keys × dim, in key order
};

struct program_model {
  std::string name;  ///< the spec's
  std::vector<program_tensor> tensors;
  std::vector<program_table> tables;
};

/// `spec`'s tensors cut from `dense` (flat, model order) and its tables' rows (spec order,
/// merged: any order of keys). Throws std::invalid_argument when they do not fit the spec.
program_model make_program_model(const model_spec& spec, const std::vector<float>& dense,
                                 const std::vector<gathered_rows>& tables);

/// model.capnp's bytes (flat-array form).
std::string encode_program_model(const program_model& model);

/// Checks a format 3 message (names, shapes against values, keys ascending, finite values);
/// throws model_file_error starting with `origin`.
program_model decode_program_model(const std::string& bytes, const std::string& origin);

/// Writes DIR/<version>/ with model.capnp and metadata.json (format 3, the spec, the run, each
/// file's SHA-256): `params` as make_program_model cuts them. Throws as make_program_model,
/// and versioned_dir_error when `dir` cannot be written; nothing stays in `dir` then.
export_result export_program_model(const train_spec& spec, const trained_parameters& params,
                                   const run_info& run, const std::string& dir);

/// The model of an export version directory, checked against metadata.json's SHA-256.
program_model read_program_version(const std::string& dir);

} // namespace actorps
