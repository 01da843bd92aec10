// The optimizers a run's shards apply to its dense tensors, as a user names and configures
// them: SGD, momentum, Adam, Adagrad. What each one is (its state, default rate and
// hyper-parameters) is one row of kernels/optimizer_table.hpp, and its update is in
// kernels/optimizer.hpp; the functions here read that table.
#pragma once

#include <optional>
#include <string>

namespace actorps {

enum class optimizer_kind { sgd, momentum, adam, adagrad };

struct optimizer_config {
  optimizer_kind kind = optimizer_kind::momentum;
  float learning_rate = 0.05f;
  float momentum = 0.9f;   ///< momentum
  float beta1 = 0.9f;      ///< adam
  float beta2 = 0.999f;    ///< adam
  float epsilon = 1e-8f;   ///< adam, adagrad
};

std::optional<optimizer_kind> parse_optimizer_kind(const std::string& name);
const char* to_string(optimizer_kind kind);
/// Every optimizer's name, for messages: "sgd, momentum, adam or adagrad".
std::string optimizer_names();

/// The learning rate a run uses when none is given: 0.1 sgd, 0.05 momentum and adagrad, 0.001 adam.
float default_learning_rate(optimizer_kind kind);

} // namespace actorps
