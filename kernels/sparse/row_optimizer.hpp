// The optimizers a sparse table applies to one row at a time: SGD, Adagrad, Adam, FTRL-proximal
// (one row each of row_optimizer_table.hpp, the traits table joined with the rules, which these
// functions read).
//
// A row is `dim` values; its state is row_state_slots(kind) × dim floats laid out slot after
// slot (Adagrad: the accumulator; Adam: m then v; FTRL: z then n). Unlike the dense optimizers
// (kernels/optimizer.hpp), rows are touched at different rates, so Adam's step — the bias
// correction's t — is counted per row by the caller. The per-element formulas are the ones in
// kernels/math.hpp.
#pragma once

#include "actors/ps/row_optimizer.hpp"  // row_optimizer_kind, row_optimizer_config, their names

#include <cstdint>
#include <optional>
#include <string>

namespace actorps {

/// Floats of state per value: 0 (sgd), 1 (adagrad), 2 (adam: m, v), 2 (ftrl: z, n).
/// Throws std::invalid_argument for a kind outside the enum, as row_counts_steps and
/// default_row_learning_rate do.
uint32_t row_state_slots(row_optimizer_kind kind);

/// Whether each row counts its own updates (Adam's bias correction): the table keeps a step
/// per row, in its checkpoints too.
bool row_counts_steps(row_optimizer_kind kind);

/// The state a new row starts with, given its initial values `row` (dim floats): Adagrad's
/// accumulator is initial_accumulator; Adam's m and v are 0; FTRL's n is 0 and z is the value
/// from which ftrl_weight gives back row[i] (z = −w·(beta/alpha + l2) − sign(w)·l1, 0 for
/// w = 0), so a randomly initialised row keeps its values until its first update instead of
/// being snapped to 0. Uses the configured learning rate as alpha.
void init_row_state(const row_optimizer_config& cfg, const float* row, float* state,
                    uint32_t dim);

/// One update of one row in place, with learning rate cfg.learning_rate × lr_scale (the
/// caller's schedule, or a push's share of a clock). FTRL alone takes lr_scale as a factor of
/// the gradient, alpha staying cfg.learning_rate: its alpha is no step size but divides the
/// whole weight (math::ftrl_weight), so a scaled alpha would rescale the row by the share of
/// its last push. `step` is the row's 1-based update count including this one (Adam's
/// bias correction; the others ignore it). `grad` is the gradient of the loss to minimise at
/// the row's current values. Throws std::invalid_argument for Adam with step 0.
void apply_row_update(const row_optimizer_config& cfg, float lr_scale, uint32_t step,
                      float* row, const float* grad, float* state, uint32_t dim);

} // namespace actorps
