// The images `actorps predict` classifies: an IDX image file (Fashion-MNIST's format, gzip-
// compressed or not) or raw float32 rows already scaled like the model's training input.
#pragma once

#include "actors/ps/dataset.hpp"

#include <optional>
#include <stdexcept>
#include <string>

namespace actorps {

enum class input_format {
  automatic,  ///< IDX when the file starts with an IDX or gzip header, else raw
  idx,        ///< IDX images (magic 0x00000803, 28×28 uint8)
  raw,        ///< little-endian float32, rows × cols, no header
};

/// "auto", "idx" or "raw" → the format; anything else → nullopt.
std::optional<input_format> parse_input_format(const std::string& text);

/// An input file that cannot be used; what() names the file and what is wrong.
struct input_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Rows of `cols` floats ready for the model (no labels): IDX pixels divided by
/// `input_divisor` (the model's, as in training), raw values as they are (they must be
/// finite). Throws input_error.
dataset read_prediction_input(const std::string& path, int cols, float input_divisor,
                              input_format format);

} // namespace actorps
