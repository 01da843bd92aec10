#include "kernels/sparse_logistic.hpp"

#include <cmath>

namespace actorps {

void sparse_logits(const uint64_t* offsets, std::size_t rows, const float* values,
                   const uint32_t* index, const float* weights, float bias, float* z) {
  for (std::size_t r = 0; r < rows; ++r) {
    double sum = bias;
    for (uint64_t i = offsets[r]; i < offsets[r + 1]; ++i)
      sum += double(weights[index[i]]) * double(values[i]);
    z[r] = static_cast<float>(sum);
  }
}

double stable_sigmoid(double z) {
  const double e = std::exp(-std::fabs(z));  // ≤ 1: never overflows
  return z >= 0 ? 1 / (1 + e) : e / (1 + e);
}

logistic_sums add_logistic_gradient(const uint64_t* offsets, std::size_t rows,
                                    const float* values, const uint32_t* index,
                                    const float* labels, const float* z, float* weight_grads) {
  logistic_sums out;
  const double inv_rows = rows > 0 ? 1.0 / double(rows) : 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    const double zr = z[r], y = labels[r];
    // −log σ(z) = softplus(−z), −log(1 − σ(z)) = softplus(z); softplus(x) = max(x, 0) +
    // log1p(e^−|x|), so the loss is softplus(z) − y·z for y in {0, 1}.
    out.loss_sum += std::fmax(zr, 0.0) + std::log1p(std::exp(-std::fabs(zr))) - y * zr;
    const double delta = (stable_sigmoid(zr) - y) * inv_rows;
    out.bias_grad += delta;
    for (uint64_t i = offsets[r]; i < offsets[r + 1]; ++i)
      weight_grads[index[i]] += static_cast<float>(delta * double(values[i]));
  }
  return out;
}

} // namespace actorps
