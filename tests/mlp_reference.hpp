// An MLP forward pass in double, written from the parameter layout in kernels/mlp.hpp
// independently of mlp.cpp: the reference the MLP tests compare with.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace actorps::test {

/// The logits of one input row (layers[0] floats). `on_hidden(z)` sees every hidden
/// pre-activation before its ReLU.
template <class OnHidden>
std::vector<double> reference_logits(const std::vector<int>& layers, const std::vector<double>& p,
                                     const float* row, OnHidden&& on_hidden) {
  std::vector<double> a(row, row + layers[0]);
  std::size_t offset = 0;
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    const int in = layers[l], out = layers[l + 1];
    const double* w = p.data() + offset;  // (in, out)
    const double* b = w + in * out;       // (out)
    offset += static_cast<std::size_t>(in) * out + out;
    std::vector<double> z(b, b + out);
    for (int i = 0; i < in; ++i) {
      for (int j = 0; j < out; ++j) z[j] += a[i] * w[i * out + j];
    }
    if (l + 2 < layers.size()) {
      for (double& v : z) {
        on_hidden(v);
        v = std::max(v, 0.0);
      }
    }
    a = std::move(z);
  }
  return a;
}

/// log Σ exp(logits), max-subtracted.
inline double reference_log_sum_exp(const std::vector<double>& logits) {
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double v : logits) sum += std::exp(v - max_logit);
  return max_logit + std::log(sum);
}

} // namespace actorps::test
