// The optimizers parameter shards apply to their blocks: SGD, momentum, Adam, Adagrad.
//
// Each update is in place on `n` parameters with `optimizer_state_slots(kind) × n` floats of
// state (zero-initialised by the caller) laid out slot after slot. The per-element arithmetic
// lives in kernels/math.hpp so that a GPU backend runs exactly the same formulas.
#pragma once

#include "actors/ps/optimizer.hpp"  // optimizer_kind, optimizer_config, their names

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace actorps {

// What each optimizer is (name, state, default rate, hyper-parameters) is its row in the traits
// table of actors/ps/optimizer.hpp, its rule is in kernels/math.hpp; these read the two joined
// (kernels/optimizer_table.hpp), as do the names and default rates of actors/ps/optimizer.hpp.

/// Floats of optimizer state per parameter: 0 (sgd), 1 (momentum, adagrad), 2 (adam).
std::size_t optimizer_state_slots(optimizer_kind kind);

/// The optimizer_hyper bits of `kind` (actors/ps/optimizer.hpp).
uint8_t optimizer_hyper_parameters(optimizer_kind kind);

/// True when none of the n values is NaN or infinite. The shards check every pushed gradient
/// with it before anything touches their state.
bool all_finite(const float* values, std::size_t n);

/// Applies one update with learning rate `lr` (the caller may scale the configured rate).
/// `step` is the 1-based count of updates applied so far including this one (Adam's bias
/// correction); it is part of the optimizer state, so whoever keeps `state` keeps the step with
/// it and checkpoints both. `grad` is the gradient of the loss to minimise.
void apply_update(const optimizer_config& cfg, float lr, int64_t step, float* param,
                  const float* grad, float* state, std::size_t n);

/// One update like apply_update, out of place and checked: reads param_in and state_in, writes
/// param_out and state_out (n and slots × n floats; each may alias its input or not, never the
/// other arrays). Returns false when a new parameter would leave [−max_parameter, max_parameter]
/// or a new state value would be NaN or infinite; the outputs are then garbage and the caller
/// keeps its inputs, refusing the update. A shard applies into spare buffers and swaps them in
/// only when every block of the update passed, so a refused update changes nothing.
bool apply_update_checked(const optimizer_config& cfg, float lr, int64_t step,
                          const float* param_in, const float* state_in, const float* grad,
                          float* param_out, float* state_out, std::size_t n, float max_parameter);

/// What apply_pushed_update found.
enum class update_check {
  applied,          ///< the outputs hold the update
  gradient_beyond,  ///< a gradient value is beyond max_gradient, NaN or infinite
  update_beyond,    ///< the gradient is within its bound; the update would leave max_parameter
};

/// apply_update_checked for a gradient straight off the wire: it also checks every gradient value
/// against max_gradient as it reads it (|g| <= max_gradient, so finite), in the same loop, so the
/// shard reads a pushed gradient once instead of once to check it and once to apply it. The
/// gradient is checked whole whatever the update does: gradient_beyond wins over update_beyond.
/// On anything but applied the outputs are garbage and the caller keeps its inputs.
update_check apply_pushed_update(const optimizer_config& cfg, float lr, int64_t step,
                                 const float* param_in, const float* state_in, const float* grad,
                                 float* param_out, float* state_out, std::size_t n,
                                 float max_parameter, float max_gradient);

} // namespace actorps
