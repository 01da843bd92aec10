#include "kernels/cpu_interaction.hpp"

#include "kernels/cpu_clones.hpp"
#include "kernels/ctr_math.hpp"

#include <algorithm>
#include <cstring>

namespace actorps {

namespace {

// Sums are kept in `lanes` accumulators (one AVX2 register, two SSE ones: GCC's vector type,
// which the compiler left to itself split into scalar and 4-wide pieces) for a whole run of
// their terms and stored once: summed in memory, each term waited for the previous store. Each
// loop keeps several independent sums in flight, as one waits on its previous addition.
constexpr int lanes = 8;
using float8 = float __attribute__((vector_size(lanes * sizeof(float))));
// Loaded and stored with memcpy (any alignment); no functions taking or returning a float8,
// whose ABI would differ between the clones.

int padded(int t) { return (t + lanes - 1) / lanes * lanes; }

} // namespace

std::size_t cpu_interaction_scratch(int t, int dim) {
  const auto forward = static_cast<std::size_t>(dim) * padded(t);
  return std::max(forward, 2 * static_cast<std::size_t>(t));
}

ACTORPS_CPU_CLONES
void cpu_interaction_forward(const float* vectors, int n, int t, int dim, float* out,
                             float* scratch) {
  const int pairs = math::interaction_pairs(t);
  const int tp = padded(t);
  const auto sample_size = static_cast<std::size_t>(t) * dim;
  // The sample as (dim, tp): vt[d·tp + j] = v[j, d]. The padding past t is read, never used:
  // a block of `lanes` pairs may run past i, and only its first i − j0 sums are stored.
  float* __restrict vt = scratch;
  for (int r = 0; r < n; ++r) {
    const float* __restrict sample = vectors + static_cast<std::size_t>(r) * sample_size;
    for (int j = 0; j < t; ++j)
      for (int d = 0; d < dim; ++d) vt[static_cast<std::size_t>(d) * tp + j] = sample[j * dim + d];
    // Pairs (i, 0 .. i−1) are contiguous in out: `lanes` of them summed over d at once.
    for (int i = 1; i < t; ++i) {
      float* __restrict row = out + static_cast<std::size_t>(r) * pairs
                              + math::interaction_pair_index(i, 0);
      const float* a = sample + i * dim;
      int j0 = 0;
      for (; j0 + lanes < i; j0 += 2 * lanes) {
        float8 acc0 = {}, acc1 = {}, b0, b1;
        for (int d = 0; d < dim; ++d) {
          const float* b = vt + static_cast<std::size_t>(d) * tp + j0;
          std::memcpy(&b0, b, sizeof b0);
          std::memcpy(&b1, b + lanes, sizeof b1);
          acc0 += a[d] * b0;
          acc1 += a[d] * b1;
        }
        std::memcpy(row + j0, &acc0, sizeof acc0);
        std::memcpy(row + j0 + lanes, &acc1, sizeof(float) * std::min(lanes, i - j0 - lanes));
      }
      if (j0 < i) {
        float8 acc = {}, b;
        for (int d = 0; d < dim; ++d) {
          std::memcpy(&b, vt + static_cast<std::size_t>(d) * tp + j0, sizeof b);
          acc += a[d] * b;
        }
        std::memcpy(row + j0, &acc, sizeof(float) * std::min(lanes, i - j0));
      }
    }
  }
}

ACTORPS_CPU_CLONES
void cpu_interaction_backward(const float* vectors, const float* dout, int n, int t, int dim,
                              float* dvectors, float* scratch) {
  const int pairs = math::interaction_pairs(t);
  const auto sample_size = static_cast<std::size_t>(t) * dim;
  for (int r = 0; r < n; ++r) {
    const float* __restrict sample = vectors + static_cast<std::size_t>(r) * sample_size;
    const float* __restrict dots_grad = dout + static_cast<std::size_t>(r) * pairs;
    // Vectors i and i + 1 at once (the last alone when t is odd). w0[k], w1[k]: the gradient of
    // pairs (i, k) and (i + 1, k); each sum over k increasing, as interaction_vector_grad sums,
    // the term k == i (k == i + 1) left out.
    for (int i = 0; i < t; i += 2) {
      const int i1 = std::min(i + 1, t - 1);  // == i when i is the last: written twice, alike
      float* __restrict w0 = scratch;
      float* __restrict w1 = scratch + t;
      for (int k = 0; k < t; ++k) {
        w0[k] = k == i ? 0.0f : dots_grad[k < i ? math::interaction_pair_index(i, k)
                                                : math::interaction_pair_index(k, i)];
        w1[k] = k == i1 ? 0.0f : dots_grad[k < i1 ? math::interaction_pair_index(i1, k)
                                                  : math::interaction_pair_index(k, i1)];
      }
      float* g0 = dvectors + static_cast<std::size_t>(r) * sample_size + i * dim;
      float* g1 = dvectors + static_cast<std::size_t>(r) * sample_size + i1 * dim;
      int d0 = 0;
      for (; d0 + 2 * lanes <= dim; d0 += 2 * lanes) {
        float8 a00 = {}, a01 = {}, a10 = {}, a11 = {}, v0, v1;
        for (int k = 0; k < t; ++k) {
          const float* v = sample + k * dim + d0;
          std::memcpy(&v0, v, sizeof v0);
          std::memcpy(&v1, v + lanes, sizeof v1);
          if (k != i) {
            a00 += w0[k] * v0;
            a01 += w0[k] * v1;
          }
          if (k != i1) {
            a10 += w1[k] * v0;
            a11 += w1[k] * v1;
          }
        }
        std::memcpy(g0 + d0, &a00, sizeof a00);
        std::memcpy(g0 + d0 + lanes, &a01, sizeof a01);
        std::memcpy(g1 + d0, &a10, sizeof a10);
        std::memcpy(g1 + d0 + lanes, &a11, sizeof a11);
      }
      for (; d0 + lanes <= dim; d0 += lanes) {
        float8 a0 = {}, a1 = {}, v;
        for (int k = 0; k < t; ++k) {
          std::memcpy(&v, sample + k * dim + d0, sizeof v);
          if (k != i) a0 += w0[k] * v;
          if (k != i1) a1 += w1[k] * v;
        }
        std::memcpy(g0 + d0, &a0, sizeof a0);
        std::memcpy(g1 + d0, &a1, sizeof a1);
      }
      for (int d = d0; d < dim; ++d) {
        float s0 = 0.0f, s1 = 0.0f;
        for (int k = 0; k < t; ++k) {
          const float v = sample[k * dim + d];
          if (k != i) s0 += w0[k] * v;
          if (k != i1) s1 += w1[k] * v;
        }
        g0[d] = s0;
        g1[d] = s1;
      }
    }
  }
}

} // namespace actorps
