// The built-in model: a multilayer perceptron (kernels/mlp.hpp) on a CPU or CUDA backend.
// `--model mlp:784-256-128-10` (or the bare widths) — input width first, one output per class.
// Its tensors are dense<l>/kernel [in, out] (He-uniform) and dense<l>/bias [out] (zeros).
#pragma once

#include "actors/ps/model_plugin.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace actorps {

/// The spec of an MLP with these widths; its initial values are kernels/parameter_init's.
model_spec mlp_model(const std::vector<int>& layers);

/// The widths of an MLP spec (its name is "mlp:W0-W1-..."); nullopt for any other model.
std::optional<std::vector<int>> mlp_layers(const model_spec& model);

/// The registry's factory: `args` are the widths "784-256-128-10"; throws model_error.
std::unique_ptr<model_plugin> make_mlp_plugin(const std::string& args);

} // namespace actorps
