// The optimizers a sparse table applies to its rows, as a user names and configures them: SGD,
// Adagrad, Adam, FTRL-proximal. What each one is (its state, default rate) is one row of
// kernels/sparse/row_optimizer_table.hpp, and its update is in kernels/sparse/row_optimizer.hpp;
// the functions here read that table.
#pragma once

#include <optional>
#include <string>

namespace actorps {

enum class row_optimizer_kind { sgd, adagrad, adam, ftrl };

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
