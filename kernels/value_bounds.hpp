// The magnitudes a shard lets into its state: a bound on every pushed gradient value and on
// every parameter value, so that one crafted or diverged push cannot wreck a run.
//
// A float is within a bound when |x| <= bound; NaN and ±inf never are. Bounds are finite and
// positive (valid_bound), so "within" implies "finite". The defaults sit far above anything a
// sane run reaches (scripts/bench/README.md, "Value bounds": the largest gradient and
// parameter of the default fashion-mnist, criteo dlrm and lr runs) and far below what overflows
// the optimizers' arithmetic (g² of a gradient at the bound is 1e12, well inside float).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace actorps {

/// The largest |gradient value| a shard applies by default.
inline constexpr float default_max_gradient = 1e6f;
/// The largest |parameter value| a shard keeps by default, dense and sparse, restored too.
inline constexpr float default_max_parameter = 1e6f;

/// How many times the median norm of a shard's recent pushes a push's gradient norm may reach
/// by default (actors/roles/norm_bound.hpp). Legitimate early pushes reached 30x the median in
/// the TFJob harness's sync run (20 refused one and failed its worker); a push of 1000.0 values
/// is 10^4x or more.
inline constexpr float default_gradient_norm_bound = 1000.0f;

struct value_bounds {
  float max_gradient = default_max_gradient;
  float max_parameter = default_max_parameter;
  float gradient_norm_bound = default_gradient_norm_bound;  ///< 0: no bound on the norm
};

/// A value as log lines print it: "%g" (3e+38, 1e+06, 0.5, nan).
std::string value_text(float value);

/// "" when `bound` can bound values (positive and finite), else why not.
std::string invalid_bound(float bound);

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
