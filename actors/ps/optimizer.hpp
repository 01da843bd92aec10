// The optimizers a run's shards apply to its dense tensors, as a user names and configures
// them: SGD, momentum, Adam, Adagrad. Each is one row of the traits table below (its name, the
// floats of state it keeps per parameter, its default learning rate, the hyper-parameters it
// reads); its update, the formula and the rule that applies it, is in kernels/math.hpp. A new
// optimizer is an enumerator and a row here, its formula and rule there, the schema's
// enumerant of the same name (schema/actorps.capnp: the wire and every checkpoint carry the
// kind) and a test; a row, rule or enumerant missing or misnamed fails the build
// (kernels/optimizer_table.hpp, actors/protocol/schema_enums.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace actorps {

enum class optimizer_kind { sgd, momentum, adam, adagrad };

/// The hyper-parameters of optimizer_config an optimizer reads besides its learning rate.
enum optimizer_hyper : uint8_t {
  hyper_none = 0,
  hyper_momentum = 1,  ///< momentum
  hyper_betas = 2,     ///< beta1, beta2
  hyper_epsilon = 4,   ///< epsilon
};

/// What the runtime knows of an optimizer besides its rule.
struct optimizer_traits {
  optimizer_kind kind;
  const char* name;             ///< as --optimizer, the schema's enumerant (case aside)
  std::size_t slots;            ///< floats of state per parameter, laid out slot after slot
  float default_learning_rate;
  uint8_t hyper;                ///< optimizer_hyper bits
};

/// The traits table, in the order of optimizer_kind and of the schema's Optimizer enum.
inline constexpr optimizer_traits optimizer_traits_table[] = {
  {optimizer_kind::sgd, "sgd", 0, 0.1f, hyper_none},
  {optimizer_kind::momentum, "momentum", 1, 0.05f, hyper_momentum},
  {optimizer_kind::adam, "adam", 2, 0.001f, hyper_betas | hyper_epsilon},  // m, v
  {optimizer_kind::adagrad, "adagrad", 1, 0.05f, hyper_epsilon},          // the accumulator
};

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
