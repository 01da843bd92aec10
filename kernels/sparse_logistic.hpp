// Logistic regression over rows in compressed-sparse-row form, one weight per feature
// occurrence: the math of the sparse-lr model (actors/model/sparse_lr_plugin.hpp), apart from
// where its weights come from.
//
// Row r's occurrences are i in [offsets[r], offsets[r+1]); occurrence i has value values[i]
// and weight weights[index[i]] (a pulled table row of width 1, index = table_rows::inverse).
#pragma once

#include <cstddef>
#include <cstdint>

namespace actorps {

/// z[r] = bias + Σ_i weights[index[i]] · values[i] over row r's occurrences, summed in double.
void sparse_logits(const uint64_t* offsets, std::size_t rows, const float* values,
                   const uint32_t* index, const float* weights, float bias, float* z);

/// σ(z) = 1 / (1 + e^−z) without overflow for any finite z (e^−|z| only).
double stable_sigmoid(double z);

/// Sums over the rows that one logistic step returns.
struct logistic_sums {
  double loss_sum = 0;   ///< Σ_r −[y ln σ(z) + (1−y) ln(1−σ(z))], exact for any z (no clamp)
  double bias_grad = 0;  ///< Σ_r (σ(z_r) − y_r) / rows: the mean loss's gradient on the bias
};

/// From the logits z of the rows and their labels (0 or 1): adds to weight_grads[index[i]],
/// for each occurrence, values[i] · (σ(z_r) − y_r) / rows — the gradient of the MEAN log loss,
/// so a weight used twice gets both uses — and returns the loss sum and the bias gradient.
logistic_sums add_logistic_gradient(const uint64_t* offsets, std::size_t rows,
                                    const float* values, const uint32_t* index,
                                    const float* labels, const float* z, float* weight_grads);

} // namespace actorps
