// The optimizers a sparse table applies to one row at a time: SGD, Adagrad, Adam, FTRL-proximal
// (one row each of row_optimizer_table.hpp, which these functions read).
//
// A row is `dim` values; its state is row_state_slots(kind) × dim floats laid out slot after
// slot (Adagrad: the accumulator; Adam: m then v; FTRL: z then n). Unlike the dense optimizers
// (kernels/optimizer.hpp), rows are touched at different rates, so Adam's step — the bias
// correction's t — is counted per row by the caller. The per-element formulas are the ones in
// kernels/math.hpp.
#pragma once

#include <cstdint>
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

/// Floats of state per value: 0 (sgd), 1 (adagrad), 2 (adam: m, v), 2 (ftrl: z, n).
/// Throws std::invalid_argument for a kind outside the enum, as the two below do.
uint32_t row_state_slots(row_optimizer_kind kind);

/// Whether each row counts its own updates (Adam's bias correction): the table keeps a step
/// per row, in its checkpoints too.
bool row_counts_steps(row_optimizer_kind kind);

/// The learning rate a table of `kind` runs at unless one is set (FTRL's alpha).
float default_row_learning_rate(row_optimizer_kind kind);

/// Throws std::invalid_argument naming the first field out of range: a learning rate that is
/// not positive and finite, a negative epsilon, initial accumulator, l1, l2 or ftrl_beta, an
/// Adam beta outside [0, 1), Adagrad with initial_accumulator and epsilon both 0 (a zero
/// gradient would divide 0 by 0), FTRL with ftrl_beta and l2 both 0 (the first weight would
/// divide by 0).
void validate_row_optimizer(const row_optimizer_config& cfg);

/// The state a new row starts with, given its initial values `row` (dim floats): Adagrad's
/// accumulator is initial_accumulator; Adam's m and v are 0; FTRL's n is 0 and z is the value
/// from which ftrl_weight gives back row[i] (z = −w·(beta/alpha + l2) − sign(w)·l1, 0 for
/// w = 0), so a randomly initialised row keeps its values until its first update instead of
/// being snapped to 0. Uses the configured learning rate as alpha.
void init_row_state(const row_optimizer_config& cfg, const float* row, float* state,
                    uint32_t dim);

/// One update of one row in place, with learning rate cfg.learning_rate × lr_scale (the
/// caller's schedule). `step` is the row's 1-based update count including this one (Adam's
/// bias correction; the others ignore it). `grad` is the gradient of the loss to minimise at
/// the row's current values. Throws std::invalid_argument for Adam with step 0.
void apply_row_update(const row_optimizer_config& cfg, float lr_scale, uint32_t step,
                      float* row, const float* grad, float* state, uint32_t dim);

} // namespace actorps
