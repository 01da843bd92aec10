// The element-wise and per-row formulas every backend runs: activations, the softmax
// cross-entropy of one row, and one optimizer step per element.
//
// This is the only copy of these formulas: the CPU backend calls them from plain loops, a CUDA
// backend calls them from its kernels. Hence only C math functions that device code has
// (expf, logf, sqrtf, pow) and no std:: calls.
#pragma once

#include <math.h>
#include <stdint.h>

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

// --- optimizers (one element, one step) ---------------------------------------------------

/// Plain SGD: p −= lr·g.
ACTORPS_HD inline void sgd_step(float& param, float grad, float lr) { param -= lr * grad; }

/// Heavy-ball momentum: v = mu·v + g; p −= lr·v.
ACTORPS_HD inline void momentum_step(float& param, float& velocity, float grad, float lr,
                                     float mu) {
  velocity = mu * velocity + grad;
  param -= lr * velocity;
}

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

/// Adagrad: acc += g²; p −= lr·g / (sqrt(acc) + eps).
ACTORPS_HD inline void adagrad_step(float& param, float& accumulator, float grad, float lr,
                                    float epsilon) {
  accumulator += grad * grad;
  param -= lr * grad / (sqrtf(accumulator) + epsilon);
}

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

} // namespace actorps::math
