// The optimizers' loops over a block; the per-element formulas are in kernels/math.hpp.
#include "kernels/optimizer.hpp"

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
      // state holds m (slot 0) then v (slot 1), n floats each.
      float* m = state;
      float* v = state + n;
      for (std::size_t i = 0; i < n; ++i) {
        math::adam_step(param[i], m[i], v[i], grad[i], lr, cfg.beta1, cfg.beta2, cfg.epsilon,
                        correction1, correction2);
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

} // namespace

bool apply_update_checked(const optimizer_config& cfg, float lr, int64_t step,
                          const float* param_in, const float* state_in, const float* grad,
                          float* param_out, float* state_out, std::size_t n, float max_parameter) {
  int32_t limit;
  std::memcpy(&limit, &max_parameter, sizeof limit);
  // The check is ORed up in the same loop, on values still in registers: a separate pass over
  // the outputs cost as much again as an SGD update.
  int32_t bad = 0;
  switch (cfg.kind) {
    case optimizer_kind::sgd:
      for (std::size_t i = 0; i < n; ++i) {
        float p = param_in[i];
        math::sgd_step(p, grad[i], lr);
        param_out[i] = p;
        bad |= beyond(p, limit);
      }
      break;
    case optimizer_kind::momentum:
      for (std::size_t i = 0; i < n; ++i) {
        float p = param_in[i], v = state_in[i];
        math::momentum_step(p, v, grad[i], lr, cfg.momentum);
        param_out[i] = p;
        state_out[i] = v;
        bad |= beyond(p, limit) | not_finite(v);
      }
      break;
    case optimizer_kind::adam: {
      if (step < 1) {
        throw std::invalid_argument("apply_update_checked: adam needs a 1-based step, got " +
                                    std::to_string(step));
      }
      const float correction1 = math::adam_bias_correction(cfg.beta1, step);
      const float correction2 = math::adam_bias_correction(cfg.beta2, step);
      for (std::size_t i = 0; i < n; ++i) {
        float p = param_in[i], m = state_in[i], v = state_in[n + i];
        math::adam_step(p, m, v, grad[i], lr, cfg.beta1, cfg.beta2, cfg.epsilon, correction1,
                        correction2);
        param_out[i] = p;
        state_out[i] = m;
        state_out[n + i] = v;
        bad |= beyond(p, limit) | not_finite(m) | not_finite(v);
      }
      break;
    }
    case optimizer_kind::adagrad:
      for (std::size_t i = 0; i < n; ++i) {
        float p = param_in[i], acc = state_in[i];
        math::adagrad_step(p, acc, grad[i], lr, cfg.epsilon);
        param_out[i] = p;
        state_out[i] = acc;
        bad |= beyond(p, limit) | not_finite(acc);
      }
      break;
    default:
      throw std::invalid_argument("apply_update_checked: unknown optimizer kind");
  }
  return bad == 0;
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
