// Scoring a file of rows with an exported model, one JSON line per row on stdout: what
// `actorps predict` does (its --help describes the lines and the input formats).
#pragma once

#include "actors/ps/value_bounds.hpp"

#include <string>

namespace actorps {

/// What to score and how, as `actorps predict`'s flags of the same names.
struct prediction_options {
  std::string model;             ///< the export version directory, DIR/<version>
  std::string input;             ///< an IDX file (.gz or not), raw float32, or Criteo lines
  std::string format = "auto";   ///< auto | idx | raw: how a classifier reads `input`
  std::string backend = "cpu";   ///< cpu | cuda | auto: where the forward pass runs
  int top = 0;                   ///< a classifier's K most probable classes (0: every one)
  float max_parameter = default_max_parameter;  ///< refuse a model with a parameter beyond it
};

/// Prints one JSON line per row of `input` to stdout, in file order: a classifier's class and
/// probabilities ({"index":0,"class":9,"probabilities":[...]}, or "top" with `top` > 0), a CTR
/// model's click probability ({"index":0,"probability":0.2371}). Returns 0, or 1 when stdout
/// could not be written. Throws std::invalid_argument naming the flag of what is wrong (an
/// option, the input's layout) and std::runtime_error when the model cannot be loaded.
int print_predictions(const prediction_options& options);

} // namespace actorps
