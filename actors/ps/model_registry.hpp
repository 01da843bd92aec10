// `--model NAME[:ARGS]` → a model plug-in. Every process of a run resolves the spec's model name
// here (workers and the evaluator build their trainer and evaluation from it), so a program that
// registers its own model must do so in every process, before the run starts.
#pragma once

#include "actors/ps/model_plugin.hpp"

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorps {

/// Thrown for an unknown model name or arguments the plug-in refuses; what() says which.
struct model_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Builds a plug-in from the text after "NAME:" ("" when there is none); throws model_error.
using model_factory = std::function<std::unique_ptr<model_plugin>(const std::string& args)>;

/// Adds (or replaces) a model under `name` (letters, digits, '_' and '-'). Thread-safe.
void register_model(const std::string& name, model_factory factory);

/// "mlp:784-256-10" → the plug-in; a bare "784-256-10" means "mlp:784-256-10". Throws
/// model_error naming the registered models when the name is unknown.
std::unique_ptr<model_plugin> make_model(const std::string& name_and_args);

/// Registered names, sorted.
std::vector<std::string> registered_models();

} // namespace actorps
