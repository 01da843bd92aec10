// Python's string arguments for the runtime's enums ("sync", "sgd", "uniform", ...): the
// runtime's own parser, or ValueError naming the argument and the choices.
#pragma once

#include "actors/ps.hpp"  // the enums and their parsers

#include <pybind11/pybind11.h>

#include <cmath>
#include <optional>
#include <string>

namespace actorps::python {

template <class Parse>
auto parse_choice(const std::string& arg, const std::string& value, Parse parse,
                  const std::string& choices) {
  auto parsed = parse(value);
  if (!parsed)
    throw pybind11::value_error(arg + ": '" + value + "' is not one of " + choices);
  return *parsed;
}

/// mode and staleness from Python's keywords into `mode_out` and `staleness_out`, which hold
/// the run's defaults (actors/ps.hpp: ssp, 2) and keep them where the keyword is None. A
/// staleness given with a mode other than ssp, or negative, is a ValueError.
inline void choose_consistency(const std::optional<std::string>& mode,
                               std::optional<int> staleness, consistency& mode_out,
                               int& staleness_out) {
  if (mode) mode_out = parse_choice("mode", *mode, parse_consistency, "sync, ssp, async");
  if (!staleness) return;
  if (mode_out != consistency::ssp)
    throw pybind11::value_error("staleness: given with mode='" + std::string(to_string(mode_out))
                                + "'; it bounds only ssp");
  if (*staleness < 0) throw pybind11::value_error("staleness: negative");
  staleness_out = *staleness;
}

/// The schedule from Python's keyword; None leaves it to the run (schedule_or_default).
inline std::optional<lr_schedule> schedule_of(const std::optional<std::string>& schedule) {
  if (!schedule) return std::nullopt;
  return parse_choice("schedule", *schedule, parse_lr_schedule, "constant, cosine, linear");
}

/// The optimizer the shards apply, from Python's arguments (lr None: the optimizer's default).
/// A learning rate given from Python: None is the optimizer's own default (0 inside); a given
/// one must be a positive finite number (0 is refused rather than read as "the default").
inline float learning_rate_of(std::optional<float> lr) {
  if (!lr) return 0.0f;
  if (!(*lr > 0) || !std::isfinite(*lr))
    throw pybind11::value_error("lr: must be > 0 and finite (None: the optimizer's default)");
  return *lr;
}

inline optimizer_config optimizer_of(const std::string& kind, std::optional<float> lr,
                                     float momentum) {
  optimizer_config o;
  o.kind = parse_choice("optimizer", kind, parse_optimizer_kind, optimizer_names());
  o.learning_rate = learning_rate_of(lr);
  o.momentum = momentum;
  return o;
}

} // namespace actorps::python
