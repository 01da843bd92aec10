// The element-wise and per-row formulas every backend runs: activations, the softmax
// cross-entropy of one row, and one optimizer step per element.
//
// This is the only copy of these formulas: the CPU backend calls them from plain loops, a CUDA
// backend calls them from its kernels. Hence only C math functions that device code has
// (expf, logf, sqrtf, pow) and no std:: calls in them.
//
// Beside each optimizer's formula is its rule, host code the shards' loops call: for a dense
// optimizer (optimizer_rule) what an update computes once and one element's step; for a row
// optimizer (row_optimizer_rule) what a configuration must satisfy, the state a new row starts
// with and one row's update. What each optimizer is besides (name, state, default rate) is its
// row in the traits tables of actors/ps/optimizer.hpp and actors/ps/row_optimizer.hpp.
#pragma once

#include "actors/ps/optimizer.hpp"
#include "actors/ps/row_optimizer.hpp"

#include <math.h>
#include <stdint.h>

#include <limits>
#include <stdexcept>
#include <string>

#if defined(__CUDACC__)
#define ACTORPS_HD __host__ __device__
#else
#define ACTORPS_HD
#endif

namespace actorps::math {

// --- activations --------------------------------------------------------------------------

/// ReLU of a pre-activation.
ACTORPS_HD inline float relu(float z) { return z > 0.0f ? z : 0.0f; }

/// ReLU'(z) from the forward output out = relu(z): 1 where the unit was active, else 0.
ACTORPS_HD inline float relu_derivative(float out) { return out > 0.0f ? 1.0f : 0.0f; }

// --- loss ---------------------------------------------------------------------------------

/// Softmax cross-entropy of one row of `cols` logits against `label` (in [0, cols)), with a
/// max-subtracted log-sum-exp. Returns the row's loss; sets *correct to whether the first
/// argmax equals the label. If dlogits is not null it receives (softmax − onehot) · grad_scale.
ACTORPS_HD inline float softmax_cross_entropy_row(const float* logits, int cols, int label,
                                                  float* dlogits, float grad_scale,
                                                  bool* correct) {
  int argmax = 0;
  float max_logit = logits[0];
  for (int j = 1; j < cols; ++j) {
    if (logits[j] > max_logit) {
      max_logit = logits[j];
      argmax = j;
    }
  }
  float sum_exp = 0.0f;
  for (int j = 0; j < cols; ++j) sum_exp += expf(logits[j] - max_logit);
  if (dlogits != nullptr) {
    const float scale = grad_scale / sum_exp;
    for (int j = 0; j < cols; ++j) {
      dlogits[j] = expf(logits[j] - max_logit) * scale - (j == label ? grad_scale : 0.0f);
    }
  }
  *correct = argmax == label;
  // log-sum-exp − logit[label], grouped so a confident correct row loses no precision.
  return (max_logit - logits[label]) + logf(sum_exp);
}

/// Softmax of one row of `cols` logits into probs (which may be logits itself), max-subtracted
/// so no exponential overflows. Each probability is exp(logit − max) / Σ exp(· − max).
ACTORPS_HD inline void softmax_row(const float* logits, int cols, float* probs) {
  float max_logit = logits[0];
  for (int j = 1; j < cols; ++j) max_logit = logits[j] > max_logit ? logits[j] : max_logit;
  float sum_exp = 0.0f;
  for (int j = 0; j < cols; ++j) {
    probs[j] = expf(logits[j] - max_logit);
    sum_exp += probs[j];
  }
  for (int j = 0; j < cols; ++j) probs[j] /= sum_exp;
}

// --- optimizers: one element's step, then the rules that apply it ---------------------------

/// Each dense optimizer's rule: `constants` is what an update computes once (not per element),
/// `prepare` computes them, `step` is one element's update with its state in s[0, slots).
template <optimizer_kind Kind>
struct optimizer_rule;  // a kind without a rule fails to compile where the table is built

/// Each row optimizer's rule: `validate` throws std::invalid_argument naming the first field
/// its formula cannot take, `init` writes a new row's state, `update` applies one row's
/// gradient (`step`: the row's 1-based count of updates, for an optimizer that counts them).
template <row_optimizer_kind Kind>
struct row_optimizer_rule;

namespace detail {
inline void require(bool ok, const char* field, const char* rule, float value) {
  if (!ok) {
    throw std::invalid_argument(std::string("row optimizer: ") + field + " must be " + rule +
                                ", got " + std::to_string(value));
  }
}
inline bool non_negative(float v) { return v >= 0 && v <= std::numeric_limits<float>::max(); }
} // namespace detail

/// Plain SGD: p −= lr·g.
ACTORPS_HD inline void sgd_step(float& param, float grad, float lr) { param -= lr * grad; }

template <>
struct optimizer_rule<optimizer_kind::sgd> {
  struct constants {
    float lr;
  };
  static constants prepare(const optimizer_config&, float lr, int64_t) { return {lr}; }
  [[gnu::always_inline]] static void step(float& p, float*, float g, const constants& c) {
    sgd_step(p, g, c.lr);
  }
};

template <>
struct row_optimizer_rule<row_optimizer_kind::sgd> {
  static void validate(const row_optimizer_config&) {}
  static void init(const row_optimizer_config&, const float*, float*, uint32_t) {}
  static void update(const row_optimizer_config&, float lr, uint32_t, float* row,
                     const float* grad, float*, uint32_t dim) {
    for (uint32_t i = 0; i < dim; ++i) sgd_step(row[i], grad[i], lr);
  }
};

/// Heavy-ball momentum: v = mu·v + g; p −= lr·v.
ACTORPS_HD inline void momentum_step(float& param, float& velocity, float grad, float lr,
                                     float mu) {
  velocity = mu * velocity + grad;
  param -= lr * velocity;
}

template <>
struct optimizer_rule<optimizer_kind::momentum> {
  struct constants {
    float lr, momentum;
  };
  static constants prepare(const optimizer_config& cfg, float lr, int64_t) {
    return {lr, cfg.momentum};
  }
  [[gnu::always_inline]] static void step(float& p, float* s, float g, const constants& c) {
    momentum_step(p, s[0], g, c.lr, c.momentum);
  }
};

/// 1 − beta^step, Adam's bias-correction denominator for the 1-based `step`; computed once
/// per update (not per element) and passed to adam_step.
ACTORPS_HD inline float adam_bias_correction(float beta, int64_t step) {
  return static_cast<float>(1.0 - pow(static_cast<double>(beta), static_cast<double>(step)));
}

/// Adam: m = b1·m + (1−b1)·g; v = b2·v + (1−b2)·g²;
/// p −= lr · (m / correction1) / (sqrt(v / correction2) + eps).
ACTORPS_HD inline void adam_step(float& param, float& m, float& v, float grad, float lr,
                                 float beta1, float beta2, float epsilon, float correction1,
                                 float correction2) {
  m = beta1 * m + (1.0f - beta1) * grad;
  v = beta2 * v + (1.0f - beta2) * grad * grad;
  const float m_hat = m / correction1;
  const float v_hat = v / correction2;
  param -= lr * m_hat / (sqrtf(v_hat) + epsilon);
}

template <>
struct optimizer_rule<optimizer_kind::adam> {
  struct constants {
    float lr, beta1, beta2, epsilon, correction1, correction2;
  };
  /// Throws std::invalid_argument for a step below 1 (the bias correction is 1-based).
  static constants prepare(const optimizer_config& cfg, float lr, int64_t step) {
    if (step < 1)
      throw std::invalid_argument("adam needs a 1-based step, got " + std::to_string(step));
    return {lr,
            cfg.beta1,
            cfg.beta2,
            cfg.epsilon,
            adam_bias_correction(cfg.beta1, step),
            adam_bias_correction(cfg.beta2, step)};
  }
  [[gnu::always_inline]] static void step(float& p, float* s, float g, const constants& c) {
    adam_step(p, s[0], s[1], g, c.lr, c.beta1, c.beta2, c.epsilon, c.correction1,
              c.correction2);
  }
};

template <>
struct row_optimizer_rule<row_optimizer_kind::adam> {
  static void validate(const row_optimizer_config& cfg) {
    detail::require(cfg.beta1 >= 0 && cfg.beta1 < 1, "beta1", "in [0, 1)", cfg.beta1);
    detail::require(cfg.beta2 >= 0 && cfg.beta2 < 1, "beta2", "in [0, 1)", cfg.beta2);
  }
  static void init(const row_optimizer_config&, const float*, float* state, uint32_t dim) {
    for (uint32_t i = 0; i < 2 * dim; ++i) state[i] = 0.0f;
  }
  /// Throws std::invalid_argument for step 0 (the bias correction is 1-based).
  static void update(const row_optimizer_config& cfg, float lr, uint32_t step, float* row,
                     const float* grad, float* state, uint32_t dim) {
    if (step < 1) throw std::invalid_argument("apply_row_update: adam needs a 1-based step");
    const float correction1 = adam_bias_correction(cfg.beta1, step);
    const float correction2 = adam_bias_correction(cfg.beta2, step);
    float* m = state;
    float* v = state + dim;
    for (uint32_t i = 0; i < dim; ++i) {
      adam_step(row[i], m[i], v[i], grad[i], lr, cfg.beta1, cfg.beta2, cfg.epsilon, correction1,
                correction2);
    }
  }
};

/// Adagrad: acc += g²; p −= lr·g / (sqrt(acc) + eps).
ACTORPS_HD inline void adagrad_step(float& param, float& accumulator, float grad, float lr,
                                    float epsilon) {
  accumulator += grad * grad;
  param -= lr * grad / (sqrtf(accumulator) + epsilon);
}

template <>
struct optimizer_rule<optimizer_kind::adagrad> {
  struct constants {
    float lr, epsilon;
  };
  static constants prepare(const optimizer_config& cfg, float lr, int64_t) {
    return {lr, cfg.epsilon};
  }
  [[gnu::always_inline]] static void step(float& p, float* s, float g, const constants& c) {
    adagrad_step(p, s[0], g, c.lr, c.epsilon);
  }
};

template <>
struct row_optimizer_rule<row_optimizer_kind::adagrad> {
  static void validate(const row_optimizer_config& cfg) {
    detail::require(detail::non_negative(cfg.initial_accumulator), "initial_accumulator", ">= 0",
                    cfg.initial_accumulator);
    // A zero gradient would divide 0 by 0.
    detail::require(cfg.initial_accumulator > 0 || cfg.epsilon > 0, "initial_accumulator",
                    "positive when epsilon is 0", cfg.initial_accumulator);
  }
  static void init(const row_optimizer_config& cfg, const float*, float* state, uint32_t dim) {
    for (uint32_t i = 0; i < dim; ++i) state[i] = cfg.initial_accumulator;
  }
  static void update(const row_optimizer_config& cfg, float lr, uint32_t, float* row,
                     const float* grad, float* state, uint32_t dim) {
    for (uint32_t i = 0; i < dim; ++i) adagrad_step(row[i], state[i], grad[i], lr, cfg.epsilon);
  }
};

/// FTRL-proximal's weight from its accumulators (McMahan et al. 2013, Algorithm 1):
/// 0 when |z| ≤ l1 — an exact zero, which is how l1 makes rows sparse — else
/// −(z − sign(z)·l1) / ((beta + sqrt(n)) / alpha + l2).
ACTORPS_HD inline float ftrl_weight(float z, float n, float alpha, float beta, float l1,
                                    float l2) {
  if (fabsf(z) <= l1) return 0.0f;
  const float shrunk = z < 0.0f ? z + l1 : z - l1;
  return -shrunk / ((beta + sqrtf(n)) / alpha + l2);
}

/// FTRL-proximal, one step with the gradient g taken at the current weight w:
/// σ = (sqrt(n + g²) − sqrt(n)) / alpha; z += g − σ·w; n += g²; w = ftrl_weight(z, n).
ACTORPS_HD inline void ftrl_step(float& weight, float& z, float& n, float grad, float alpha,
                                 float beta, float l1, float l2) {
  const float n_next = n + grad * grad;
  const float sigma = (sqrtf(n_next) - sqrtf(n)) / alpha;
  z += grad - sigma * weight;
  n = n_next;
  weight = ftrl_weight(z, n, alpha, beta, l1, l2);
}

template <>
struct row_optimizer_rule<row_optimizer_kind::ftrl> {
  static void validate(const row_optimizer_config& cfg) {
    detail::require(detail::non_negative(cfg.ftrl_beta), "ftrl_beta", ">= 0", cfg.ftrl_beta);
    detail::require(detail::non_negative(cfg.l1), "l1", ">= 0", cfg.l1);
    detail::require(detail::non_negative(cfg.l2), "l2", ">= 0", cfg.l2);
    // The first weight would divide by 0.
    detail::require(cfg.ftrl_beta > 0 || cfg.l2 > 0, "ftrl_beta", "positive when l2 is 0",
                    cfg.ftrl_beta);
  }
  /// z is the value from which the weight formula gives back row[i], so a randomly initialised
  /// row keeps its values until its first update instead of being snapped to 0.
  static void init(const row_optimizer_config& cfg, const float* row, float* state,
                   uint32_t dim) {
    // With n = 0 the weight is −(z − sign(z)·l1) / (beta/alpha + l2); solved for z.
    const float denominator = cfg.ftrl_beta / cfg.learning_rate + cfg.l2;
    float* z = state;
    float* n = state + dim;
    for (uint32_t i = 0; i < dim; ++i) {
      const float w = row[i];
      z[i] = w == 0.0f ? 0.0f : -w * denominator - (w < 0.0f ? -cfg.l1 : cfg.l1);
      n[i] = 0.0f;
    }
  }
  /// `lr`'s part beyond the table's rate (a push's share of a clock in ssp and async: 1 / live
  /// workers) scales the gradient: alpha divides the whole weight (ftrl_weight), so a share
  /// taken as alpha would rescale the row by its last push's share (a row last pushed by the
  /// one worker of three still training came out 3 times as large).
  static void update(const row_optimizer_config& cfg, float lr, uint32_t, float* row,
                     const float* grad, float* state, uint32_t dim) {
    float* z = state;
    float* n = state + dim;
    const float share = lr / cfg.learning_rate;  // exactly 1 for lr == cfg.learning_rate
    for (uint32_t i = 0; i < dim; ++i)
      ftrl_step(row[i], z[i], n[i], share * grad[i], cfg.learning_rate, cfg.ftrl_beta, cfg.l1,
                cfg.l2);
  }
};

} // namespace actorps::math
