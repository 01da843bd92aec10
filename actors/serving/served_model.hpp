// Any exported model, as `actorps predict` and `actorps evaluate` load it: model.capnp holds an
// MLP (format 1, exported_model.hpp) or a CTR model (format 2, ctr_model.hpp); its version says
// which.
#pragma once

#include "actors/serving/ctr_model.hpp"
#include "actors/serving/exported_model.hpp"
#include "kernels/value_bounds.hpp"

#include <cstddef>
#include <string>
#include <variant>

namespace actorps {

using served_model = std::variant<exported_model, ctr_model>;

/// Parses a model.capnp message and checks it as its format requires. `origin` (the file)
/// starts every error message; throws model_file_error.
served_model decode_served_model(const std::string& bytes, const std::string& origin);

/// Reads and decodes `path`; throws model_file_error naming it.
served_model read_served_model(const std::string& path);

/// The largest metadata.json read.
inline constexpr std::size_t max_metadata_bytes = std::size_t(16) << 20;

/// Throws model_file_error ("<origin>: tensor dense0/kernel value 3e+38 is beyond the bound
/// 1e+06 ...") unless every parameter of `model`, dense and table rows, lies within `bound`.
void check_parameter_bound(const served_model& model, float bound, const std::string& origin);

/// Reads model.capnp of an export version directory (DIR/<version>), as `actorps predict` and
/// `actorps evaluate` serve it: its SHA-256 must be the one metadata.json records, and every
/// parameter within `max_parameter` (--max-parameter). Throws model_file_error naming what is
/// missing or wrong. An export root, or a delta version, gives the newest complete chain there
/// (export_chain.hpp's load_export_chain; each version skipped is said on stderr).
served_model load_served_model(const std::string& dir,
                               float max_parameter = default_max_parameter);

/// model.capnp of an export version directory, its SHA-256 checked against the one
/// metadata.json records; throws model_file_error naming what is missing or wrong.
std::string read_checked_model(const std::string& dir);

/// The MLP of `model`; throws model_file_error ("<origin>: a CTR model ..., not an MLP") for a
/// CTR model.
exported_model as_mlp(served_model model, const std::string& origin);

} // namespace actorps
