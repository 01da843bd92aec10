// The MLP's forward and backward passes, written only against the backend interface so the
// same code runs on every backend.
#include "kernels/mlp.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace actorps {
namespace {

void validate_layers(const std::vector<int>& layers) {
  if (layers.size() < 2) {
    throw std::invalid_argument("mlp: need at least 2 layer widths (input and output), got " +
                                std::to_string(layers.size()));
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i] <= 0) {
      throw std::invalid_argument("mlp: layer width " + std::to_string(i) + " is " +
                                  std::to_string(layers[i]) + ", must be positive");
    }
  }
}

std::vector<int> checked(std::vector<int> layers, int max_batch) {
  validate_layers(layers);
  if (max_batch <= 0) {
    throw std::invalid_argument("mlp: max_batch is " + std::to_string(max_batch) +
                                ", must be positive");
  }
  return layers;
}

} // namespace

std::size_t mlp_parameter_count(const std::vector<int>& layers) {
  validate_layers(layers);
  std::size_t count = 0;
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    const auto in = static_cast<std::size_t>(layers[l]);
    const auto out = static_cast<std::size_t>(layers[l + 1]);
    count += in * out + out;
  }
  return count;
}

mlp::mlp(backend& be, std::vector<int> layers, int max_batch)
  : be_(be),
    layers_(checked(std::move(layers), max_batch)),
    max_batch_(max_batch),
    param_count_(mlp_parameter_count(layers_)),
    in_host_(be.computes_in_host_memory()) {
  const std::size_t batch = static_cast<std::size_t>(max_batch_);
  std::size_t offset = 0;
  for (std::size_t l = 0; l + 1 < layers_.size(); ++l) {
    const auto in = static_cast<std::size_t>(layers_[l]);
    const auto out = static_cast<std::size_t>(layers_[l + 1]);
    kernel_offset_.push_back(offset);
    offset += in * out;
    bias_offset_.push_back(offset);
    offset += out;
    acts_.emplace_back(be_, batch * out);
    deltas_.emplace_back(be_, batch * out);
  }
  if (!in_host_) {
    params_ = device_buffer<float>(be_, param_count_);
    grads_ = device_buffer<float>(be_, param_count_);
    input_ = device_buffer<float>(be_, batch * static_cast<std::size_t>(layers_.front()));
  }
  labels_ = device_buffer<int32_t>(be_, batch);
}

void mlp::set_parameters(const float* host_params) {
  if (in_host_) {
    params_in_use_ = host_params;
    return;
  }
  be_.copy_to_device(params_.get(), host_params, param_count_ * sizeof(float));
  params_in_use_ = params_.get();
}

float* mlp::forward_logits(const float* x, int n) {
  if (!params_in_use_) throw std::logic_error("mlp: set_parameters was never called");
  if (in_host_) {
    input_in_use_ = x;
  } else {
    be_.copy_to_device(input_.get(), x,
                       static_cast<std::size_t>(n) * layers_.front() * sizeof(float));
    input_in_use_ = input_.get();
  }
  const std::size_t num_layers = acts_.size();
  const float* a_prev = input_in_use_;
  for (std::size_t l = 0; l < num_layers; ++l) {
    const int in = layers_[l];
    const int out = layers_[l + 1];
    const float* w = params_in_use_ + kernel_offset_[l];
    float* z = acts_[l].get();
    // a_prev is (n, in), w is (in, out), z is (n, out)
    be_.gemm(false, false, n, out, in, 1.0f, a_prev, in, w, out, 0.0f, z, out);
    const bool hidden = l + 1 < num_layers;
    be_.bias_activation_forward(z, params_in_use_ + bias_offset_[l], n, out,
                                hidden ? activation::relu : activation::identity);
    a_prev = z;
  }
  return acts_.back().get();
}

loss_stats mlp::forward(const float* x, const int32_t* y, int n, bool keep_dlogits) {
  const float* logits = forward_logits(x, n);
  be_.copy_to_device(labels_.get(), y, static_cast<std::size_t>(n) * sizeof(int32_t));
  return be_.softmax_cross_entropy(logits, labels_.get(), n, layers_.back(),
                                   keep_dlogits ? deltas_.back().get() : nullptr,
                                   1.0f / static_cast<float>(n));
}

loss_stats mlp::train_step(const float* x, const int32_t* y, int n, float* grad_host) {
  if (n <= 0 || n > max_batch_) {
    throw std::invalid_argument("mlp::train_step: batch of " + std::to_string(n) +
                                " rows, must be in [1, " + std::to_string(max_batch_) + "]");
  }
  const loss_stats stats = forward(x, y, n, true);
  float* grads = in_host_ ? grad_host : grads_.get();  // every value is written below
  // deltas_.back() now holds dLoss/dlogits of the mean loss; walk the layers backwards.
  for (std::size_t l = acts_.size(); l-- > 0;) {
    const int in = layers_[l];
    const int out = layers_[l + 1];
    const float* a_prev = l == 0 ? input_in_use_ : acts_[l - 1].get();
    const float* delta = deltas_[l].get();
    // dW = a_prevᵀ · delta: a_prev is (n, in), delta is (n, out), dW is (in, out)
    be_.gemm(true, false, in, out, n, 1.0f, a_prev, in, delta, out, 0.0f,
             grads + kernel_offset_[l], out);
    be_.bias_backward(grads + bias_offset_[l], delta, n, out);
    if (l > 0) {
      // delta_prev = (delta · Wᵀ) ⊙ relu'(a_prev): delta is (n, out), W is (in, out)
      float* delta_prev = deltas_[l - 1].get();
      be_.gemm(false, true, n, in, out, 1.0f, delta, out, params_in_use_ + kernel_offset_[l], out,
               0.0f, delta_prev, in);
      be_.activation_backward(delta_prev, a_prev, static_cast<std::size_t>(n) * in,
                              activation::relu);
    }
  }
  if (!in_host_) be_.copy_to_host(grad_host, grads_.get(), param_count_ * sizeof(float));
  return stats;
}

loss_stats mlp::evaluate(const float* x, const int32_t* y, int n) {
  if (n < 0) throw std::invalid_argument("mlp::evaluate: negative row count");
  loss_stats total;
  const auto in = static_cast<std::size_t>(layers_.front());
  for (int begin = 0; begin < n; begin += max_batch_) {
    const int rows = std::min(max_batch_, n - begin);
    const loss_stats chunk = forward(x + static_cast<std::size_t>(begin) * in, y + begin, rows,
                                     false);
    total.loss_sum += chunk.loss_sum;
    total.correct += chunk.correct;
    total.rows += chunk.rows;
  }
  return total;
}

void mlp::predict(const float* x, int n, float* probs_host) {
  if (n < 0) throw std::invalid_argument("mlp::predict: negative row count");
  const auto in = static_cast<std::size_t>(layers_.front());
  const auto out = static_cast<std::size_t>(layers_.back());
  for (int begin = 0; begin < n; begin += max_batch_) {
    const int rows = std::min(max_batch_, n - begin);
    float* logits = forward_logits(x + static_cast<std::size_t>(begin) * in, rows);
    be_.softmax(logits, rows, layers_.back(), logits);  // in place: the logits are not needed
    be_.copy_to_host(probs_host + static_cast<std::size_t>(begin) * out, logits,
                     static_cast<std::size_t>(rows) * out * sizeof(float));
  }
}

} // namespace actorps
