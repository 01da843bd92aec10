// The optimizers a sparse table applies to its rows, as a user names and configures them: SGD,
// Adagrad, Adam, FTRL-proximal. Each is one row of the traits table below (name, state, whether
// a row counts its own steps, default rate); its rule (what a configuration must satisfy, the
// state a new row starts with, one row's update) is in kernels/math.hpp beside its formula. A
// new row optimizer is an enumerator and a row here, its formula and rule there, the schema's
// enumerant of the same name (schema/actorps.capnp's SparseTableSpec.Optimizer) and a test; a
// row, rule or enumerant missing or misnamed fails the build
// (kernels/sparse/row_optimizer_table.hpp, actors/protocol/schema_enums.cpp).
//
// "adam" means the same here as for dense tensors (actors/ps/optimizer.hpp): the bias
// correction counts the updates of the value it corrects. Every dense value is updated on every
// step, so a dense tensor counts steps once; rows are touched at different rates, so a row
// counts its own (`counts_steps`: the sparse table keeps a step per row for such an optimizer).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace actorps {

enum class row_optimizer_kind { sgd, adagrad, adam, ftrl };

/// What the runtime knows of a row optimizer besides its rule.
struct row_optimizer_traits {
  row_optimizer_kind kind;
  const char* name;             ///< as --table-optimizer, the schema's enumerant (case aside)
  uint32_t slots;               ///< floats of state per value, laid out slot after slot
  bool counts_steps;            ///< the table keeps a step count per row for it
  float default_learning_rate;
};

/// The traits table, in the order of row_optimizer_kind and of the schema's
/// SparseTableSpec.Optimizer enum.
inline constexpr row_optimizer_traits row_optimizer_traits_table[] = {
  {row_optimizer_kind::sgd, "sgd", 0, false, 0.05f},
  {row_optimizer_kind::adagrad, "adagrad", 1, false, 0.05f},  // the accumulator
  {row_optimizer_kind::adam, "adam", 2, true, 0.05f},         // m, v
  {row_optimizer_kind::ftrl, "ftrl", 2, false, 0.05f},        // z, n; the rate is alpha
};

struct row_optimizer_config {
  row_optimizer_kind kind = row_optimizer_kind::adagrad;
  float learning_rate = 0.05f;        ///< all; FTRL's alpha
  float initial_accumulator = 0.1f;   ///< adagrad: the accumulator a new row starts with
  float epsilon = 1e-8f;              ///< adagrad, adam
  float beta1 = 0.9f;                 ///< adam
  float beta2 = 0.999f;               ///< adam
  float ftrl_beta = 1.0f;             ///< ftrl: the per-coordinate rate is alpha/(beta + √n)
  float l1 = 0.0f;                    ///< ftrl: |z| ≤ l1 gives an exact zero weight
  float l2 = 0.0f;                    ///< ftrl
};

std::optional<row_optimizer_kind> parse_row_optimizer_kind(const std::string& name);
const char* to_string(row_optimizer_kind kind);

/// The names, in table order, for a message: "sgd, adagrad, adam or ftrl".
std::string row_optimizer_names();

/// The learning rate a table of `kind` runs at unless one is set (FTRL's alpha).
float default_row_learning_rate(row_optimizer_kind kind);

/// Throws std::invalid_argument naming the first field out of range: a learning rate that is
/// not positive and finite, a negative epsilon, initial accumulator, l1, l2 or ftrl_beta, an
/// Adam beta outside [0, 1), Adagrad with initial_accumulator and epsilon both 0 (a zero
/// gradient would divide 0 by 0), FTRL with ftrl_beta and l2 both 0 (the first weight would
/// divide by 0).
void validate_row_optimizer(const row_optimizer_config& cfg);

} // namespace actorps
