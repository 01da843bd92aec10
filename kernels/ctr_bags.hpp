// What the CTR kernels (dlrm, wide_deep) need beyond one key per field: multi-hot fields, whose
// bag of keys per sample pools into one vector (sum or mean), and sample weights, which scale
// each sample's loss and gradient. Both pass through the backend (embedding_bag_pool,
// embedding_bag_expand, scale_rows), so the CPU and CUDA backends run the same steps.
#pragma once

#include "kernels/backend.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace actorps {

/// A batch's bags: bag (r, f) of sample r, field f holds the key index entries
/// [offsets[r·fields + f], offsets[r·fields + f + 1]) (offsets[0] = 0), each pooled by
/// scale[r·fields + f] (ctr_bag_scales).
struct ctr_bags {
  const int32_t* offsets = nullptr;  ///< n·fields + 1, ascending
  const float* scale = nullptr;      ///< n·fields
};

/// scale (n·fields) of each bag: math::bag_scale of its length, `mean[f]` saying whether field f
/// pools by the mean (empty `mean`: every field sums).
void ctr_bag_scales(const int32_t* offsets, int n, int fields, const std::vector<uint8_t>& mean,
                    std::vector<float>& scale);

/// Σ_r weights[r] · (sigmoid cross-entropy of logits[r] against labels[r]) over n samples, in
/// double: a weighted batch's loss sum.
double weighted_loss_sum(const float* logits, const float* labels, const float* weights, int n);

/// Throws std::invalid_argument unless the bags of n samples are well formed (offsets ascending
/// from 0) and every index entry of them is in [0, u); `who` names the model in the message.
void check_bags(const char* who, const ctr_bags& bags, const int32_t* index, int u, int n,
                int fields);

/// The backend's copies of a batch's bags and sample weights, and the per-key gradient scratch
/// of the pooling's backward; grown on demand.
class ctr_bag_buffers {
public:
  explicit ctr_bag_buffers(backend& be) : be_(be) {}

  /// Copies `count` bags (offsets count + 1, scales count) to the backend.
  void stage(const ctr_bags& bags, int count);
  /// Copies n sample weights to the backend; returns them there.
  float* stage_weights(const float* weights, int n);
  /// Copies `entries` index entries to `buffer` (grown when needed); returns it.
  int32_t* stage_index(device_buffer<int32_t>& buffer, const int32_t* index, std::size_t entries);
  /// Room for `floats` per-key gradients.
  float* keys_scratch(std::size_t floats);

  const int32_t* offsets() const { return offsets_.get(); }
  const float* scale() const { return scale_.get(); }

private:
  backend& be_;
  device_buffer<int32_t> offsets_;
  device_buffer<float> scale_, weights_, dkeys_;
};

} // namespace actorps
