// model.capnp, the exported model in our own schema (schema/model_export.capnp): the MLP's
// widths, its input scaling and every parameter tensor, whole and named.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace actorps {

/// A model.capnp that is missing, unreadable or malformed, or whose tensors do not fit its
/// layers; what() names the file and what is wrong.
struct model_file_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The file name of the Cap'n Proto model inside an export directory.
inline constexpr const char* model_capnp_name = "model.capnp";

/// An MLP ready for inference: dense layers, ReLU between them, softmax at the end.
struct exported_model {
  std::vector<int> layers;        ///< widths, input first
  std::vector<float> parameters;  ///< flat, in the mlp layout (kernels/mlp.hpp)
  float input_divisor = 1.0f;     ///< the model's input = raw value / input_divisor
};

/// One parameter tensor of the mlp layout: its name, shape and place in the flat vector.
struct tensor_slot {
  std::string name;                ///< "dense0/kernel", "dense0/bias", ...
  std::vector<std::size_t> shape;  ///< kernel {in, out}, bias {out}
  std::size_t offset = 0;          ///< first float in the flat parameters
  std::size_t size = 0;
};

/// The tensors of an MLP with these widths, in layout order (the names and offsets of
/// block_layout's tensors). Throws std::invalid_argument for fewer than two widths.
std::vector<tensor_slot> tensor_slots(const std::vector<int>& layers);

/// The ExportedModel message of `model` (flat-array form). Throws std::invalid_argument when
/// the parameters do not fit the layers.
std::string encode_exported_model(const exported_model& model);

/// Parses and checks an ExportedModel message: format version, widths, activations, every
/// tensor's name, shape and size against the widths, finite values. `origin` (the file)
/// starts every error message.
exported_model decode_exported_model(const std::string& bytes, const std::string& origin);

/// Reads and decodes `path`; throws model_file_error naming it.
exported_model read_exported_model(const std::string& path);

/// Reads model.capnp of an export version directory (DIR/<version>), checked as
/// load_served_model checks it (served_model.hpp). Throws model_file_error naming what is
/// missing or wrong; when `dir` is an export root rather than a version, the message names its
/// newest version.
exported_model load_model_directory(const std::string& dir);

} // namespace actorps
