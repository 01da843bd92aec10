// The readers of model.capnp's two formats, each given the root of a message that
// decode_served_model (served_model.hpp) has framed and whose version it has dispatched on.
// Internal to the export library: it shows the generated schema.
#pragma once

#include "actors/serving/ctr_model.hpp"
#include "actors/serving/exported_model.hpp"
#include "schema/model_export.capnp.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace actorps {

inline constexpr uint32_t mlp_format_version = 1;  ///< ExportedModel of an MLP
inline constexpr uint32_t ctr_format_version = 2;  ///< ExportedModel of a CTR model

/// Frames `bytes` as one ExportedModel message (whole words, nothing after it, a traversal
/// limit) and hands its root to `read`; throws model_file_error starting with `origin`.
void read_model_root(const std::string& bytes, const std::string& origin,
                     const std::function<void(exported::ExportedModel::Reader)>& read);

/// "[16, 12]".
std::string shape_text(const std::vector<std::size_t>& shape);

/// Checks a format 1 root (widths, activations, every tensor against the widths, finite
/// values); throws model_file_error starting with `origin`.
exported_model read_mlp_model(exported::ExportedModel::Reader root, const std::string& origin);

/// Checks a format 2 root (kind, layout, sizes, every tensor and the table against them, keys
/// ascending and of the 26 fields, finite values); throws model_file_error starting with
/// `origin`.
ctr_model read_ctr_model(exported::ExportedModel::Reader root, const std::string& origin);

} // namespace actorps
