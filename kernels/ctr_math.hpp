// The per-element formulas of the click-through-rate (DLRM, DeepFM) kernels: the order of the
// feature interaction's pairs, one pairwise dot product and its gradient, the factorization
// machine's second-order term and its gradient, and the sigmoid cross-entropy of one logit.
//
// As with kernels/math.hpp, this is the only copy: the CPU backend calls these from plain
// loops, the CUDA backend from its kernels (one thread per output element), so only C math
// functions that device code has and no std:: calls.
#pragma once

#include "kernels/math.hpp"

namespace actorps::math {

// --- dot interaction ----------------------------------------------------------------------
//
// The t vectors of one sample interact in the t(t−1)/2 pairs (i, j) with i > j, taken from
// the strictly lower triangle row by row:
//   p = 0: (1,0)   p = 1: (2,0)   p = 2: (2,1)   p = 3: (3,0)   ...   p = i(i−1)/2 + j.
// This is the order of the DLRM reference (interact_features, "dot", no self-interaction);
// an exported model must flatten its lower triangle the same way.

/// The number of pairs among t vectors: t(t−1)/2.
ACTORPS_HD inline int interaction_pairs(int t) { return t * (t - 1) / 2; }

/// The position of pair (i, j), i > j ≥ 0, in the order above: i(i−1)/2 + j.
ACTORPS_HD inline int interaction_pair_index(int i, int j) { return i * (i - 1) / 2 + j; }

/// The pair (i, j), i > j, at position p of the order above (the inverse of
/// interaction_pair_index). The float square root only guesses i; integer steps correct it.
ACTORPS_HD inline void interaction_pair(int p, int* i, int* j) {
  int row = static_cast<int>((1.0f + sqrtf(8.0f * static_cast<float>(p) + 1.0f)) * 0.5f);
  while (row > 1 && interaction_pair_index(row, 0) > p) --row;
  while (interaction_pair_index(row + 1, 0) <= p) ++row;
  *i = row;
  *j = p - interaction_pair_index(row, 0);
}

/// Pair p's dot product for one sample: vectors is (t, dim), the result Σ_d v[i,d]·v[j,d].
ACTORPS_HD inline float interaction_pair_dot(const float* vectors, int dim, int p) {
  int i = 0, j = 0;
  interaction_pair(p, &i, &j);
  const float* a = vectors + i * dim;
  const float* b = vectors + j * dim;
  float dot = 0.0f;
  for (int d = 0; d < dim; ++d) dot += a[d] * b[d];
  return dot;
}

/// One element of the interaction's input gradient for one sample: vectors is (t, dim), dout
/// (pairs) the gradient of the dots; returns ∂/∂v[i,d] = Σ_{k≠i} dout[pair(i,k)]·v[k,d],
/// summed over k in increasing order.
ACTORPS_HD inline float interaction_vector_grad(const float* vectors, const float* dout, int t,
                                                int dim, int i, int d) {
  float grad = 0.0f;
  for (int k = 0; k < t; ++k) {
    if (k == i) continue;
    const int p = k < i ? interaction_pair_index(i, k) : interaction_pair_index(k, i);
    grad += dout[p] * vectors[k * dim + d];
  }
  return grad;
}

// --- factorization machine (DeepFM) --------------------------------------------------------
//
// The second-order term of a factorization machine over one sample's t field vectors (t, dim):
// Σ_{i<j} <v_i, v_j> = ½ Σ_d [(Σ_i v[i,d])² − Σ_i v[i,d]²], in O(t·dim) instead of the pairs'
// O(t²·dim). Its gradient is ∂/∂v[i,d] = s_d − v[i,d], s_d = Σ_k v[k,d].

/// Column d's sum over the t vectors of one sample, s_d = Σ_k v[k,d], k increasing.
ACTORPS_HD inline float fm_column_sum(const float* vectors, int t, int dim, int d) {
  float sum = 0.0f;
  for (int k = 0; k < t; ++k) sum += vectors[k * dim + d];
  return sum;
}

/// One sample's second-order term ½ Σ_d (s_d² − Σ_i v[i,d]²), d increasing.
ACTORPS_HD inline float fm_second_order(const float* vectors, int t, int dim) {
  float total = 0.0f;
  for (int d = 0; d < dim; ++d) {
    const float s = fm_column_sum(vectors, t, dim, d);
    float squares = 0.0f;
    for (int k = 0; k < t; ++k) squares += vectors[k * dim + d] * vectors[k * dim + d];
    total += s * s - squares;
  }
  return 0.5f * total;
}

/// One element of its input gradient for the gradient `dout` of the term: dout·(s_d − v[i,d]).
ACTORPS_HD inline float fm_vector_grad(float dout, float column_sum, float v) {
  return dout * (column_sum - v);
}

// --- multi-hot pooling ----------------------------------------------------------------------
//
// A multi-hot field holds a bag of keys per sample; the model folds the bag's embedding rows into
// one vector: scale · Σ rows, scale 1 (sum) or 1/length (mean; an empty bag pools to zeros).
// Bag b holds the entries [offsets[b], offsets[b + 1]) of the key index.

/// Element d of bag b's pooled vector: scale[b] · Σ_k rows[index[k], d], k increasing.
ACTORPS_HD inline float bag_pool_element(const float* rows, int dim, const int32_t* index,
                                         const int32_t* offsets, const float* scale, int b,
                                         int d) {
  float sum = 0.0f;
  for (int32_t k = offsets[b]; k < offsets[b + 1]; ++k)
    sum += rows[static_cast<size_t>(index[k]) * dim + d];
  return scale[b] * sum;
}

/// The scale of a bag of `length` keys: 1 to sum, 1/length for the mean (0 for an empty bag).
ACTORPS_HD inline float bag_scale(int length, bool mean) {
  if (!mean) return 1.0f;
  return length > 0 ? 1.0f / static_cast<float>(length) : 0.0f;
}

// --- binary loss --------------------------------------------------------------------------

/// The logistic function 1 / (1 + e^−z), from whichever side keeps e^· ≤ 1 (no overflow).
ACTORPS_HD inline float sigmoid(float z) {
  if (z >= 0.0f) return 1.0f / (1.0f + expf(-z));
  const float e = expf(z);
  return e / (1.0f + e);
}

/// Sigmoid cross-entropy of one logit z against a label y in [0, 1]:
/// −[y·ln σ(z) + (1−y)·ln(1−σ(z))] = max(z, 0) − z·y + log1p(e^−|z|), finite for every finite z.
/// If dlogit is not null it receives (σ(z) − y)·grad_scale; if prob is not null, σ(z).
ACTORPS_HD inline float sigmoid_cross_entropy(float z, float y, float grad_scale, float* dlogit,
                                              float* prob) {
  const float p = sigmoid(z);
  if (dlogit != nullptr) *dlogit = (p - y) * grad_scale;
  if (prob != nullptr) *prob = p;
  return fmaxf(z, 0.0f) - z * y + log1pf(expf(-fabsf(z)));
}

} // namespace actorps::math
