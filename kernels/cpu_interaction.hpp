// The CPU backend's DLRM dot interaction (backend::dot_interaction_forward / _backward) as loops
// along contiguous memory, cloned for AVX2 (cpu_clones.hpp). Each value is the sum that
// math::interaction_pair_dot / interaction_vector_grad (kernels/ctr_math.hpp) form, term for
// term in the same order: the same bits as those per-element formulas, which the CUDA kernels
// run. Called per element, at a stride of dim, they took 61 % of a DLRM run; DLRM's train_step
// at batch 256 went 7.8 -> 3.2 ms along contiguous memory, 2.0 ms with the 8-wide accumulators
// (scripts/bench/ctr_throughput.sh).
#pragma once

#include <cstddef>

namespace actorps {

/// The floats of scratch either call below needs for t vectors of dim floats.
std::size_t cpu_interaction_scratch(int t, int dim);

/// out (n×pairs) = every sample's pairwise dots.
void cpu_interaction_forward(const float* vectors, int n, int t, int dim, float* out,
                             float* scratch);

/// dvectors (n×t×dim) = the interaction's input gradient for dout (n×pairs).
void cpu_interaction_backward(const float* vectors, const float* dout, int n, int t, int dim,
                              float* dvectors, float* scratch);

} // namespace actorps
