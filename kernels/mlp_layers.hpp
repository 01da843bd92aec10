// The dense layers of the CTR models' MLPs (dlrm's bottom and top, wide_deep's deep part): their
// place in the flat parameters and their forward and backward steps, against the backend
// interface.
#pragma once

#include "kernels/backend.hpp"

#include <cstddef>
#include <vector>

namespace actorps {

/// One dense layer within a model's flat parameters: kernel [in, out] row-major, bias [out].
struct mlp_layer {
  int in, out;
  std::size_t kernel, bias;  ///< offsets of its tensors in the flat parameters
};

/// The layers of an MLP with the given widths (input and output included), their tensors from
/// `offset` on (advanced past them).
inline std::vector<mlp_layer> mlp_layers_of(const std::vector<int>& widths, std::size_t& offset) {
  std::vector<mlp_layer> layers;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    mlp_layer ly{widths[l], widths[l + 1], 0, 0};
    ly.kernel = offset;
    offset += static_cast<std::size_t>(ly.in) * ly.out;
    ly.bias = offset;
    offset += static_cast<std::size_t>(ly.out);
    layers.push_back(ly);
  }
  return layers;
}

/// z (n×out) = act(a (n×in) · W + b).
inline void mlp_layer_forward(backend& be, const float* params, const mlp_layer& ly,
                              const float* a, int n, float* z, activation act) {
  be.gemm(false, false, n, ly.out, ly.in, 1.0f, a, ly.in, params + ly.kernel, ly.out, 0.0f, z,
          ly.out);
  be.bias_activation_forward(z, params + ly.bias, n, ly.out, act);
}

/// The layer's gradients from its input a (n×in) and delta = ∂loss/∂z (n×out):
/// dW (in×out) = aᵀ·delta, db (out) = column sums of delta.
inline void mlp_layer_grads(backend& be, float* grads, const mlp_layer& ly, const float* a,
                            const float* delta, int n) {
  be.gemm(true, false, ly.in, ly.out, n, 1.0f, a, ly.in, delta, ly.out, 0.0f,
          grads + ly.kernel, ly.out);
  be.bias_backward(grads + ly.bias, delta, n, ly.out);
}

/// The delta of the layer below: delta_in (n×in) = (delta (n×out) · Wᵀ) ⊙ relu'(a), where
/// a (n×in) = relu(·) is this layer's input.
inline void mlp_layer_input_delta(backend& be, const float* params, const mlp_layer& ly,
                                  const float* delta, const float* a, int n, float* delta_in) {
  be.gemm(false, true, n, ly.in, ly.out, 1.0f, delta, ly.out, params + ly.kernel, ly.out, 0.0f,
          delta_in, ly.in);
  be.activation_backward(delta_in, a, static_cast<std::size_t>(n) * ly.in, activation::relu);
}

} // namespace actorps
