// The CPU loops that run as their AVX2 clone on any recent x86-64 (kernels/cpu_clones.hpp),
// built a second time for the baseline x86-64 alone (tests/CMakeLists.txt), called through
// plain types: their own headers' types live in the renamed namespace, out of the tests' reach.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baseline_twins {

/// optimizer_config's fields; kind as optimizer_kind's value.
struct optimizer {
  int kind;
  float momentum, beta1, beta2, epsilon;
};

std::size_t interaction_scratch(int t, int dim);
void interaction_forward(const float* vectors, int n, int t, int dim, float* out, float* scratch);
void interaction_backward(const float* vectors, const float* dout, int n, int t, int dim,
                          float* dvectors, float* scratch);

bool apply_update_checked(const optimizer& cfg, float lr, int64_t step, const float* param_in,
                          const float* state_in, const float* grad, float* param_out,
                          float* state_out, std::size_t n, float max_parameter);
/// update_check's value.
int apply_pushed_update(const optimizer& cfg, float lr, int64_t step, const float* param_in,
                        const float* state_in, const float* grad, float* param_out,
                        float* state_out, std::size_t n, float max_parameter, float max_gradient);

} // namespace baseline_twins
