// A multilayer perceptron (dense + ReLU hidden layers, softmax cross-entropy output), written
// once against the backend interface.
//
// Parameter layout, shared by every role: for each layer l (in_l → out_l), the tensor
// "dense<l>/kernel" of shape [in_l, out_l] (row-major) followed by "dense<l>/bias" [out_l].
// The flat host vector holds the tensors in that order.
#pragma once

#include "kernels/backend.hpp"

#include <vector>

namespace actorps {

/// Number of parameters of an MLP with the given layer widths (e.g. {784, 256, 128, 10}).
std::size_t mlp_parameter_count(const std::vector<int>& layers);

class mlp {
public:
  /// `max_batch` bounds the rows of any later train_step / evaluate chunk.
  mlp(backend& be, std::vector<int> layers, int max_batch);

  const std::vector<int>& layers() const { return layers_; }
  std::size_t parameter_count() const { return param_count_; }

  /// The flat host parameters the next calls run on: copied into the backend's replica, or on a
  /// backend that computes in host memory (CPU) read where they are, without a copy; there keep
  /// host_params alive and unchanged until the last call that uses them.
  void set_parameters(const float* host_params);

  /// Forward and backward on one minibatch x (n×in, host), y (n, host), n ≤ max_batch.
  /// Writes the gradient of the *mean* loss over the batch into grad_host (parameter_count()
  /// floats, flat layout) and returns the loss sums.
  loss_stats train_step(const float* x, const int32_t* y, int n, float* grad_host);

  /// Forward only over n rows (any n; processed in chunks of max_batch); returns loss sums.
  loss_stats evaluate(const float* x, const int32_t* y, int n);

  /// Inference over n rows x (n×in, host; any n, in chunks of max_batch): writes the class
  /// probabilities, the softmax of the logits, into probs_host (n×out, row-major).
  void predict(const float* x, int n, float* probs_host);

private:
  /// Runs the layers on n ≤ max_batch rows of host x; returns the logits (backend memory).
  float* forward_logits(const float* x, int n);
  loss_stats forward(const float* x, const int32_t* y, int n, bool keep_dlogits);

  backend& be_;
  std::vector<int> layers_;
  int max_batch_;
  std::size_t param_count_;
  std::vector<std::size_t> kernel_offset_, bias_offset_;  // into the flat layout
  const bool in_host_;  // be_.computes_in_host_memory(): host buffers are used in place
  // The backend's copies of the parameters, the gradient and the batch; not allocated in host
  // memory, where the caller's own buffers are used.
  device_buffer<float> params_, grads_;
  device_buffer<float> input_;
  const float* params_in_use_ = nullptr;  // params_, or the caller's host parameters
  const float* input_in_use_ = nullptr;   // the batch of the last forward_logits
  device_buffer<int32_t> labels_;
  std::vector<device_buffer<float>> acts_;    // acts_[l]: output of layer l (max_batch × out_l)
  std::vector<device_buffer<float>> deltas_;  // deltas_[l]: dLoss/dz of layer l
};

} // namespace actorps
