#include "kernels/cpu_interaction.hpp"

#include "kernels/cpu_clones.hpp"
#include "kernels/ctr_math.hpp"

#include <cstring>

namespace actorps {

namespace {

// Sums are kept in `lanes` accumulators (one AVX2 register, two SSE ones: GCC's vector type,
// which the compiler left to itself split into scalar and 4-wide pieces) for a whole run of
// their terms and stored once: summed in memory, each term waited for the previous store.
constexpr int lanes = 8;
using float8 = float __attribute__((vector_size(lanes * sizeof(float))));
// Loaded and stored with memcpy (any alignment); no functions taking or returning a float8,
// whose ABI would differ between the clones.

} // namespace

ACTORPS_CPU_CLONES
void cpu_interaction_forward(const float* vectors, int n, int t, int dim, float* out,
                             float* transposed) {
  const int pairs = math::interaction_pairs(t);
  const auto sample_size = static_cast<std::size_t>(t) * dim;
  float* __restrict vt = transposed;  // the sample as (dim, t): vt[d·t + j] = v[j, d]
  for (int r = 0; r < n; ++r) {
    const float* __restrict sample = vectors + static_cast<std::size_t>(r) * sample_size;
    for (int j = 0; j < t; ++j)
      for (int d = 0; d < dim; ++d) vt[static_cast<std::size_t>(d) * t + j] = sample[j * dim + d];
    // Pairs (i, 0 .. i−1) are contiguous in out: `lanes` of them summed over d at once.
    for (int i = 1; i < t; ++i) {
      float* __restrict row = out + static_cast<std::size_t>(r) * pairs
                              + math::interaction_pair_index(i, 0);
      const float* a = sample + i * dim;
      int j0 = 0;
      for (; j0 + 2 * lanes <= i; j0 += 2 * lanes) {  // two chains of additions in flight
        float8 acc0 = {}, acc1 = {}, b0, b1;
        for (int d = 0; d < dim; ++d) {
          const float* b = vt + static_cast<std::size_t>(d) * t + j0;
          std::memcpy(&b0, b, sizeof b0);
          std::memcpy(&b1, b + lanes, sizeof b1);
          acc0 += a[d] * b0;
          acc1 += a[d] * b1;
        }
        std::memcpy(row + j0, &acc0, sizeof acc0);
        std::memcpy(row + j0 + lanes, &acc1, sizeof acc1);
      }
      for (; j0 + lanes <= i; j0 += lanes) {
        float8 acc = {}, b;
        for (int d = 0; d < dim; ++d) {
          std::memcpy(&b, vt + static_cast<std::size_t>(d) * t + j0, sizeof b);
          acc += a[d] * b;
        }
        std::memcpy(row + j0, &acc, sizeof acc);
      }
      for (int j = j0; j < i; ++j) {
        float dot = 0.0f;
        for (int d = 0; d < dim; ++d) dot += a[d] * vt[static_cast<std::size_t>(d) * t + j];
        row[j] = dot;
      }
    }
  }
}

ACTORPS_CPU_CLONES
void cpu_interaction_backward(const float* vectors, const float* dout, int n, int t, int dim,
                              float* dvectors, float* weights) {
  const int pairs = math::interaction_pairs(t);
  const auto sample_size = static_cast<std::size_t>(t) * dim;
  float* __restrict w = weights;
  for (int r = 0; r < n; ++r) {
    const float* __restrict sample = vectors + static_cast<std::size_t>(r) * sample_size;
    const float* __restrict dots_grad = dout + static_cast<std::size_t>(r) * pairs;
    for (int i = 0; i < t; ++i) {
      // w[k]: the gradient of pair (i, k), k ≠ i; summed over k increasing, as
      // interaction_vector_grad sums.
      for (int k = 0; k < t; ++k)
        if (k != i)
          w[k] = dots_grad[k < i ? math::interaction_pair_index(i, k)
                                 : math::interaction_pair_index(k, i)];
      float* __restrict grad = dvectors + static_cast<std::size_t>(r) * sample_size + i * dim;
      int d0 = 0;
      for (; d0 + 2 * lanes <= dim; d0 += 2 * lanes) {  // two chains of additions in flight
        float8 acc0 = {}, acc1 = {}, v0, v1;
        for (int k = 0; k < t; ++k) {
          if (k == i) continue;
          const float* v = sample + k * dim + d0;
          std::memcpy(&v0, v, sizeof v0);
          std::memcpy(&v1, v + lanes, sizeof v1);
          acc0 += w[k] * v0;
          acc1 += w[k] * v1;
        }
        std::memcpy(grad + d0, &acc0, sizeof acc0);
        std::memcpy(grad + d0 + lanes, &acc1, sizeof acc1);
      }
      for (; d0 + lanes <= dim; d0 += lanes) {
        float8 acc = {}, v;
        for (int k = 0; k < t; ++k) {
          if (k == i) continue;
          std::memcpy(&v, sample + k * dim + d0, sizeof v);
          acc += w[k] * v;
        }
        std::memcpy(grad + d0, &acc, sizeof acc);
      }
      for (int d = d0; d < dim; ++d) {
        float sum = 0.0f;
        for (int k = 0; k < t; ++k)
          if (k != i) sum += w[k] * sample[k * dim + d];
        grad[d] = sum;
      }
    }
  }
}

} // namespace actorps
