// The magnitudes a shard lets into its state: a bound on every pushed gradient value and on
// every parameter value, so that one crafted or diverged push cannot wreck a run.
//
// A float is within a bound when |x| <= bound; NaN and ±inf never are. Bounds are finite and
// positive (valid_bound), so "within" implies "finite". The defaults sit far above anything a
// sane run reaches (scripts/bench/README.md, "Value bounds": the largest gradient and
// parameter of the default fashion-mnist, criteo dlrm and lr runs) and far below what overflows
// the optimizers' arithmetic (g² of a gradient at the bound is 1e12, well inside float).
#pragma once

#include "actors/ps/value_bounds.hpp"  // value_bounds, its defaults, invalid_bound

#include <cstddef>
#include <optional>
#include <string>

namespace actorps {

/// The largest |x| of the n values (0 for none): inf when one is infinite, NaN when one is NaN.
float max_abs(const float* values, std::size_t n);

/// True when every one of the n values has |x| <= bound (so none is NaN or infinite). About
/// twice as fast as max_abs: where only the answer counts (the optimizers' outputs), use this.
bool all_within(const float* values, std::size_t n, float bound);

/// Copies the n values to `to` and returns all_within(values, n, bound), in one pass: a sync
/// shard keeps each pushed gradient until its clock's mean and checks it as it copies it.
bool copy_within(float* to, const float* values, std::size_t n, float bound);

/// The sum of the squares of the n values (a gradient's L2 norm squared), in float lanes so that
/// it vectorises: a shard takes it of every push it bounds by norm (norm_bound.hpp).
float sum_of_squares(const float* values, std::size_t n);

/// The index of the first of the n values outside the bound, or nullopt: for error messages.
std::optional<std::size_t> first_outside(const float* values, std::size_t n, float bound);

/// "gradient value 3e+38 of block 4 is beyond the bound 1e+06" or "... is not finite": why a
/// gradient (values, n) whose max_abs exceeded `bound` is refused; `where` names its part.
std::string gradient_refusal(const float* values, std::size_t n, float bound,
                             const std::string& where);

} // namespace actorps
