// Compiled with the token actorps renamed (tests/CMakeLists.txt): these headers declare the
// baseline twins, which this target builds from the kernels' own sources.
#include "tests/baseline_twins/baseline_twins.hpp"

#include "kernels/cpu_interaction.hpp"
#include "kernels/optimizer.hpp"

namespace baseline_twins {

namespace {

actorps::optimizer_config config_of(const optimizer& cfg) {
  actorps::optimizer_config out;
  out.kind = static_cast<actorps::optimizer_kind>(cfg.kind);
  out.momentum = cfg.momentum;
  out.beta1 = cfg.beta1;
  out.beta2 = cfg.beta2;
  out.epsilon = cfg.epsilon;
  return out;
}

} // namespace

std::size_t interaction_scratch(int t, int dim) { return actorps::cpu_interaction_scratch(t, dim); }

void interaction_forward(const float* vectors, int n, int t, int dim, float* out, float* scratch) {
  actorps::cpu_interaction_forward(vectors, n, t, dim, out, scratch);
}

void interaction_backward(const float* vectors, const float* dout, int n, int t, int dim,
                          float* dvectors, float* scratch) {
  actorps::cpu_interaction_backward(vectors, dout, n, t, dim, dvectors, scratch);
}

bool apply_update_checked(const optimizer& cfg, float lr, int64_t step, const float* param_in,
                          const float* state_in, const float* grad, float* param_out,
                          float* state_out, std::size_t n, float max_parameter) {
  return actorps::apply_update_checked(config_of(cfg), lr, step, param_in, state_in, grad,
                                       param_out, state_out, n, max_parameter);
}

int apply_pushed_update(const optimizer& cfg, float lr, int64_t step, const float* param_in,
                        const float* state_in, const float* grad, float* param_out,
                        float* state_out, std::size_t n, float max_parameter, float max_gradient) {
  return static_cast<int>(actorps::apply_pushed_update(config_of(cfg), lr, step, param_in,
                                                       state_in, grad, param_out, state_out, n,
                                                       max_parameter, max_gradient));
}

} // namespace baseline_twins
