// The magnitudes a shard lets into its state (--max-gradient, --max-parameter,
// --gradient-norm-bound): what a program sets them to and how it checks a value it was given.
// kernels/value_bounds.hpp says why they exist and holds the checks a shard applies; the two
// functions here are implemented there (kernels/value_bounds.cpp).
#pragma once

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

} // namespace actorps
