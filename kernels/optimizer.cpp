// The optimizers' loops over a block; the per-element formulas are in kernels/math.hpp.
#include "kernels/optimizer.hpp"

#include "kernels/cpu_clones.hpp"
#include "kernels/math.hpp"

#include <cstring>
#include <stdexcept>

namespace actorps {

std::optional<optimizer_kind> parse_optimizer_kind(const std::string& name) {
  if (name == "sgd") return optimizer_kind::sgd;
  if (name == "momentum") return optimizer_kind::momentum;
  if (name == "adam") return optimizer_kind::adam;
  if (name == "adagrad") return optimizer_kind::adagrad;
  return std::nullopt;
}

const char* to_string(optimizer_kind kind) {
  switch (kind) {
    case optimizer_kind::sgd: return "sgd";
    case optimizer_kind::momentum: return "momentum";
    case optimizer_kind::adam: return "adam";
    case optimizer_kind::adagrad: return "adagrad";
  }
  return "unknown";
}

std::size_t optimizer_state_slots(optimizer_kind kind) {
  switch (kind) {
    case optimizer_kind::sgd: return 0;
    case optimizer_kind::momentum: return 1;
    case optimizer_kind::adam: return 2;
    case optimizer_kind::adagrad: return 1;
  }
  throw std::invalid_argument("optimizer_state_slots: unknown optimizer kind");
}

void apply_update(const optimizer_config& cfg, float lr, int64_t step, float* param,
                  const float* grad, float* state, std::size_t n) {
  switch (cfg.kind) {
    case optimizer_kind::sgd:
      for (std::size_t i = 0; i < n; ++i) math::sgd_step(param[i], grad[i], lr);
      return;
    case optimizer_kind::momentum:
      for (std::size_t i = 0; i < n; ++i) {
        math::momentum_step(param[i], state[i], grad[i], lr, cfg.momentum);
      }
      return;
    case optimizer_kind::adam: {
      if (step < 1) {
        throw std::invalid_argument("apply_update: adam needs a 1-based step, got " +
                                    std::to_string(step));
      }
      const float correction1 = math::adam_bias_correction(cfg.beta1, step);
      const float correction2 = math::adam_bias_correction(cfg.beta2, step);
      // Read once: the loop's stores could alias cfg as far as the compiler knows, and reloading
      // it every element kept the loop from vectorising.
      const float beta1 = cfg.beta1, beta2 = cfg.beta2, epsilon = cfg.epsilon;
      // state holds m (slot 0) then v (slot 1), n floats each.
      float* m = state;
      float* v = state + n;
      for (std::size_t i = 0; i < n; ++i) {
        math::adam_step(param[i], m[i], v[i], grad[i], lr, beta1, beta2, epsilon, correction1,
                        correction2);
      }
      return;
    }
    case optimizer_kind::adagrad:
      for (std::size_t i = 0; i < n; ++i) {
        math::adagrad_step(param[i], state[i], grad[i], lr, cfg.epsilon);
      }
      return;
  }
  throw std::invalid_argument("apply_update: unknown optimizer kind");
}

namespace {

/// 1 when |p| is beyond the bound whose bits are `limit` (or p is NaN, inf), else 0: on the bits,
/// as value_bounds.cpp's all_within, so that the check vectorises inside the update's loop.
inline int32_t beyond(float p, int32_t limit) {
  int32_t bits;
  std::memcpy(&bits, &p, sizeof bits);
  return static_cast<int32_t>((bits & 0x7fffffff) > limit);
}

/// 1 when s is NaN or inf (exponent all ones), else 0.
inline int32_t not_finite(float s) {
  int32_t bits;
  std::memcpy(&bits, &s, sizeof bits);
  return static_cast<int32_t>((bits & 0x7f800000) == 0x7f800000);
}

/// Bits of what an update loop found: 1 a new value beyond its bound, 2 a gradient beyond its.
constexpr int32_t update_bad = 1, gradient_bad = 2;

/// The checked update's loops. The bounds are ORed up in the same loop, on values still in
/// registers: a separate pass over the outputs cost as much again as an SGD update. With
/// CheckGradient the gradient's bound too, on the value the update reads anyway: one more
/// compare per element, where a pass of its own read the whole gradient a second time. Always
/// inlined: each CPU clone below compiles its own copy for its instruction set.
template <bool CheckGradient>
[[gnu::always_inline]] inline int32_t checked_update_loop(const optimizer_config& cfg, float lr, int64_t step,
                            const float* param_in, const float* state_in, const float* grad,
                            float* param_out, float* state_out, std::size_t n,
                            float max_parameter, float max_gradient) {
  int32_t limit, grad_limit;
  std::memcpy(&limit, &max_parameter, sizeof limit);
  std::memcpy(&grad_limit, &max_gradient, sizeof grad_limit);
  int32_t bad = 0, bad_grad = 0;
  auto check_gradient = [&](float g) {
    if constexpr (CheckGradient) bad_grad |= beyond(g, grad_limit);
  };
  switch (cfg.kind) {
    case optimizer_kind::sgd:
      for (std::size_t i = 0; i < n; ++i) {
        float p = param_in[i], g = grad[i];
        math::sgd_step(p, g, lr);
        param_out[i] = p;
        bad |= beyond(p, limit);
        check_gradient(g);
      }
      break;
    case optimizer_kind::momentum:
      for (std::size_t i = 0; i < n; ++i) {
        float p = param_in[i], v = state_in[i], g = grad[i];
        math::momentum_step(p, v, g, lr, cfg.momentum);
        param_out[i] = p;
        state_out[i] = v;
        bad |= beyond(p, limit) | not_finite(v);
        check_gradient(g);
      }
      break;
    case optimizer_kind::adam: {
      if (step < 1) {
        throw std::invalid_argument("apply_update_checked: adam needs a 1-based step, got " +
                                    std::to_string(step));
      }
      const float correction1 = math::adam_bias_correction(cfg.beta1, step);
      const float correction2 = math::adam_bias_correction(cfg.beta2, step);
      const float beta1 = cfg.beta1, beta2 = cfg.beta2, epsilon = cfg.epsilon;  // as above
      const float* m_in = state_in;
      const float* v_in = state_in + n;
      float* m_out = state_out;
      float* v_out = state_out + n;
      for (std::size_t i = 0; i < n; ++i) {
        float p = param_in[i], m = m_in[i], v = v_in[i], g = grad[i];
        math::adam_step(p, m, v, g, lr, beta1, beta2, epsilon, correction1, correction2);
        param_out[i] = p;
        m_out[i] = m;
        v_out[i] = v;
        bad |= beyond(p, limit) | not_finite(m) | not_finite(v);
        check_gradient(g);
      }
      break;
    }
    case optimizer_kind::adagrad:
      for (std::size_t i = 0; i < n; ++i) {
        float p = param_in[i], acc = state_in[i], g = grad[i];
        math::adagrad_step(p, acc, g, lr, cfg.epsilon);
        param_out[i] = p;
        state_out[i] = acc;
        bad |= beyond(p, limit) | not_finite(acc);
        check_gradient(g);
      }
      break;
    // No default: a kind added without its case here fails the build (-Wswitch), where it
    // threw at the first push. A kind off the wire is checked when its spec is decoded.
  }
  return (bad ? update_bad : 0) | (bad_grad ? gradient_bad : 0);
}

} // namespace

// The checked updates are cloned for AVX2 (cpu_clones.hpp): 4 floats wide, an SGD update with
// its bound checks is compute-bound (2.5 memcpys of its payload at 1 MiB).

ACTORPS_CPU_CLONES
bool apply_update_checked(const optimizer_config& cfg, float lr, int64_t step,
                          const float* param_in, const float* state_in, const float* grad,
                          float* param_out, float* state_out, std::size_t n, float max_parameter) {
  return checked_update_loop<false>(cfg, lr, step, param_in, state_in, grad, param_out,
                                    state_out, n, max_parameter, 0.0f) == 0;
}

ACTORPS_CPU_CLONES
update_check apply_pushed_update(const optimizer_config& cfg, float lr, int64_t step,
                                 const float* param_in, const float* state_in, const float* grad,
                                 float* param_out, float* state_out, std::size_t n,
                                 float max_parameter, float max_gradient) {
  auto found = checked_update_loop<true>(cfg, lr, step, param_in, state_in, grad, param_out,
                                         state_out, n, max_parameter, max_gradient);
  if (found & gradient_bad) return update_check::gradient_beyond;
  return found ? update_check::update_beyond : update_check::applied;
}

bool all_finite(const float* values, std::size_t n) {
  // OR-reduce "exponent all ones" over the bits: vectorises, unlike a chain of isfinite().
  uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

float default_learning_rate(optimizer_kind kind) {
  switch (kind) {
    case optimizer_kind::sgd: return 0.1f;
    case optimizer_kind::momentum: return 0.05f;
    case optimizer_kind::adam: return 0.001f;
    case optimizer_kind::adagrad: return 0.05f;
  }
  return 0.05f;
}

} // namespace actorps
