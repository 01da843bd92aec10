// The model as a user and a plug-in describe it: named dense tensors (name, shape, how to
// initialise them), sparse tables of keyed rows, and the plug-in's name ("mlp:784-256-128-10");
// and how the shards keep workers together (consistency). How the runtime cuts a model into
// blocks and places them on shards is its own (actors/protocol/model_spec.hpp).
#pragma once

#include "actors/ps/sparse_table_config.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace actorps {

enum class consistency { sync, ssp, async };

std::optional<consistency> parse_consistency(const std::string& name);
const char* to_string(consistency mode);

/// How the chief fills a tensor before the first clock. Every uniform tensor draws its values, in
/// model order, from one seeded splitmix64 stream (actors/ps/splitmix64.hpp), so the same spec and
/// seed give the same bits everywhere.
enum class tensor_init { zeros, uniform };

/// One named dense tensor of a model: "dense0/kernel" of shape [784, 256], row-major.
struct tensor_spec {
  std::string name;
  std::vector<uint32_t> shape;
  tensor_init init = tensor_init::zeros;
  double scale = 0;  ///< uniform: values in [-scale, scale)

  std::size_t size() const;  ///< product of the shape (1 for a scalar)
};

/// A table of keyed rows: uint64 keys, each a row of config.dim floats created on its first
/// push (or its N-th, with admission), with its own optimizer state (kernels/sparse).
struct sparse_table_spec {
  std::string name;  ///< "embedding/user", unique among the model's tensors and tables
  sparse_table_config config;
};

/// The model as the runtime sees it: dense tensors, cut into blocks by block_layout, and
/// sparse tables, whose rows live on the shard that owns their key's bucket.
struct model_spec {
  std::string name;                  ///< the plug-in and its arguments: "mlp:784-256-128-10"
  std::vector<tensor_spec> tensors;  ///< dense tensors, in layout order
  std::vector<sparse_table_spec> sparse_tables = {};  // may be left out of a brace list

  std::size_t total_floats() const;
};

/// Initial values of every tensor, flat in model order (see tensor_init).
std::vector<float> initial_values(const model_spec& model, uint64_t seed);

/// "dense0/kernel [784, 256]" — for messages that compare two models.
std::string describe(const tensor_spec& tensor);

/// Checks names (non-empty, unique across tensors and tables, printable), shapes (non-zero
/// dimensions, at most 2^31 floats in all) and each table's config; "" when valid, else what is
/// wrong.
std::string invalid_model(const model_spec& model);

/// Parses "784-256-128-10" into widths; nullopt unless ≥ 2 positive integers joined by '-'.
std::optional<std::vector<int>> parse_layers(const std::string& text);
std::string to_string(const std::vector<int>& layers);

} // namespace actorps
