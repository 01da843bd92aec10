// Wide & Deep and DeepFM's forward and backward passes, written only against the backend
// interface so the same code runs on every backend.
//
// One embedding_gather lays each sample's field embeddings out contiguously (n × fields·dim):
// the deep MLP's input without a copy, its first layer run as two gemms (embeddings against
// rows [0, fields·dim) of its kernel, the dense features against the rest), and the FM's
// vectors. Sums that need no kernel of their own run as gemms: Σ_f w_f as the gathered weights
// times a column of ones, and each part added into the deep output's logits with beta = 1.
// Backwards, the FM's gradient is written first and the deep MLP's added onto it, then one
// embedding_scatter_add per table sums each row's uses.
#include "kernels/wide_deep.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace actorps {
namespace {

void check_positive(const char* what, int value) {
  if (value <= 0) {
    throw std::invalid_argument(std::string("wide_deep: ") + what + " is " +
                                std::to_string(value) + ", must be positive");
  }
}

wide_deep_shape checked(wide_deep_shape shape, int max_batch) {
  validate_wide_deep_shape(shape);
  check_positive("max_batch", max_batch);
  return shape;
}

/// The deep layer l's activation: ReLU on hidden layers, identity on the output.
activation deep_activation(std::size_t l, std::size_t layers) {
  return l + 1 < layers ? activation::relu : activation::identity;
}

} // namespace

std::vector<int> wide_deep_shape::deep_layers() const {
  std::vector<int> all{fields * dim + dense_in};
  all.insert(all.end(), hidden.begin(), hidden.end());
  all.push_back(1);
  return all;
}

void validate_wide_deep_shape(const wide_deep_shape& shape) {
  check_positive("dense_in", shape.dense_in);
  check_positive("fields", shape.fields);
  check_positive("dim", shape.dim);
  for (std::size_t l = 0; l < shape.hidden.size(); ++l) {
    check_positive(("hidden width " + std::to_string(l)).c_str(), shape.hidden[l]);
  }
}

std::size_t wide_deep_parameter_count(const wide_deep_shape& shape) {
  validate_wide_deep_shape(shape);
  std::size_t count = static_cast<std::size_t>(shape.dense_in);
  mlp_layers_of(shape.deep_layers(), count);
  return count;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> wide_deep_tensors(
  const wide_deep_shape& shape) {
  validate_wide_deep_shape(shape);
  std::vector<std::pair<std::string, std::vector<int64_t>>> tensors;
  tensors.push_back({"linear/kernel", {shape.dense_in, 1}});
  const auto all = shape.deep_layers();
  for (std::size_t l = 0; l + 1 < all.size(); ++l) {
    tensors.push_back({"deep" + std::to_string(l) + "/kernel", {all[l], all[l + 1]}});
    tensors.push_back({"deep" + std::to_string(l) + "/bias", {all[l + 1]}});
  }
  return tensors;
}

wide_deep::wide_deep(backend& be, wide_deep_shape shape, int max_batch)
  : be_(be),
    shape_(checked(std::move(shape), max_batch)),
    max_batch_(max_batch),
    in_host_(be.computes_in_host_memory()),
    bag_buffers_(be) {
  linear_ = 0;
  param_count_ = static_cast<std::size_t>(shape_.dense_in);
  deep_ = mlp_layers_of(shape_.deep_layers(), param_count_);
  const auto batch = static_cast<std::size_t>(max_batch_);
  const auto fields = static_cast<std::size_t>(shape_.fields);
  for (const mlp_layer& ly : deep_) {
    acts_.emplace_back(be_, batch * ly.out);
    deltas_.emplace_back(be_, batch * ly.out);
  }
  if (!in_host_) {
    params_ = device_buffer<float>(be_, param_count_);
    grads_ = device_buffer<float>(be_, param_count_);
    dense_ = device_buffer<float>(be_, batch * shape_.dense_in);
  }
  labels_ = device_buffer<float>(be_, batch);
  index_ = device_buffer<int32_t>(be_, batch * fields);
  windex_ = device_buffer<int32_t>(be_, batch * fields);
  vectors_ = device_buffer<float>(be_, batch * fields * shape_.dim);
  weights_ = device_buffer<float>(be_, batch * fields);
  if (shape_.fm) fm_ = device_buffer<float>(be_, batch);
  ones_ = device_buffer<float>(be_, fields);
  const std::vector<float> ones(fields, 1.0f);
  be_.copy_to_device(ones_.get(), ones.data(), fields * sizeof(float));
  be_.synchronize();  // `ones` goes out of scope
}

void wide_deep::set_parameters(const float* host_params) {
  if (in_host_) {
    params_in_use_ = host_params;
    return;
  }
  be_.copy_to_device(params_.get(), host_params, param_count_ * sizeof(float));
  params_in_use_ = params_.get();
}

void wide_deep::check_rows(const char* table, const ctr_rows& rows, int n,
                           const ctr_bags* bags) const {
  if (rows.count < 0) {
    throw std::invalid_argument(std::string("wide_deep: negative row count of ") + table);
  }
  if (bags) {
    check_bags((std::string("wide_deep: ") + table).c_str(), *bags, rows.index, rows.count, n,
               shape_.fields);
    return;
  }
  const std::size_t entries = static_cast<std::size_t>(n) * shape_.fields;
  for (std::size_t i = 0; i < entries; ++i) {
    if (rows.index[i] < 0 || rows.index[i] >= rows.count) {
      throw std::invalid_argument(
        std::string("wide_deep: ") + table + " index " + std::to_string(rows.index[i]) +
        " of sample " + std::to_string(i / shape_.fields) + ", field " +
        std::to_string(i % shape_.fields) + " is not in [0, " + std::to_string(rows.count) +
        ")");
    }
  }
}

void wide_deep::stage_rows(const ctr_rows& embeddings, const ctr_rows& weights,
                           bool for_training) {
  const auto dim = static_cast<std::size_t>(shape_.dim);
  // At least one row each, so that an empty table still has a buffer to point at.
  const auto rows = static_cast<std::size_t>(std::max(embeddings.count, 1));
  const auto wrows = static_cast<std::size_t>(std::max(weights.count, 1));
  if (rows > table_rows_) {
    table_ = device_buffer<float>(be_, rows * dim);
    table_rows_ = rows;
  }
  if (wrows > wtable_rows_) {
    wtable_ = device_buffer<float>(be_, wrows);
    wtable_rows_ = wrows;
  }
  if (for_training) {
    if (dvectors_.size() == 0) {  // the backward's own buffers, made on the first train_step
      const auto batch = static_cast<std::size_t>(max_batch_);
      dvectors_ = device_buffer<float>(be_, batch * shape_.fields * dim);
      dweights_ = device_buffer<float>(be_, batch * shape_.fields);
    }
    if (rows > dtable_rows_) {
      dtable_ = device_buffer<float>(be_, rows * dim);
      dtable_rows_ = rows;
    }
    if (wrows > dwtable_rows_) {
      dwtable_ = device_buffer<float>(be_, wrows);
      dwtable_rows_ = wrows;
    }
  }
  if (embeddings.count > 0) {
    be_.copy_to_device(table_.get(), embeddings.values,
                       static_cast<std::size_t>(embeddings.count) * dim * sizeof(float));
  }
  if (weights.count > 0) {
    be_.copy_to_device(wtable_.get(), weights.values,
                       static_cast<std::size_t>(weights.count) * sizeof(float));
  }
}

void wide_deep::stage_bags(const ctr_rows& embeddings, const ctr_rows& weights,
                           const ctr_bags& bags, int n) {
  const int count = n * shape_.fields;
  const auto keys = static_cast<std::size_t>(bags.offsets[count]);
  bag_buffers_.stage_index(bag_index_, embeddings.index, keys);
  bag_buffers_.stage_index(bag_windex_, weights.index, keys);
  bag_buffers_.stage(bags, count);
}

float* wide_deep::forward_logits(const float* dense, const ctr_rows& embeddings,
                                 const ctr_rows& weights, int begin, int n, bool bags) {
  if (!params_in_use_) throw std::logic_error("wide_deep: set_parameters was never called");
  const int fields = shape_.fields, dim = shape_.dim, dense_in = shape_.dense_in;
  const std::size_t lookups = static_cast<std::size_t>(n) * fields;
  const std::size_t first = static_cast<std::size_t>(begin) * fields;
  if (!bags) {
    be_.copy_to_device(index_.get(), embeddings.index + first, lookups * sizeof(int32_t));
    be_.copy_to_device(windex_.get(), weights.index + first, lookups * sizeof(int32_t));
  }
  if (in_host_) {
    dense_in_use_ = dense;
  } else {
    be_.copy_to_device(dense_.get(), dense,
                       static_cast<std::size_t>(n) * dense_in * sizeof(float));
    dense_in_use_ = dense_.get();
  }
  if (bags) {  // each field's vector and wide weight: the pool of its bag's rows
    be_.embedding_bag_pool(table_.get(), embeddings.count, dim, bag_index_.get(),
                           bag_buffers_.offsets() + first, bag_buffers_.scale() + first,
                           static_cast<int>(lookups), vectors_.get());
    be_.embedding_bag_pool(wtable_.get(), weights.count, 1, bag_windex_.get(),
                           bag_buffers_.offsets() + first, bag_buffers_.scale() + first,
                           static_cast<int>(lookups), weights_.get());
  } else {
    be_.embedding_gather(table_.get(), embeddings.count, dim, index_.get(),
                         static_cast<int>(lookups), vectors_.get());
    be_.embedding_gather(wtable_.get(), weights.count, 1, windex_.get(),
                         static_cast<int>(lookups), weights_.get());
  }

  // Deep layer 0, input concat(embeddings, dense): two gemms into one output.
  const int embedded = fields * dim;
  const mlp_layer& l0 = deep_.front();
  const float* w0 = params_in_use_ + l0.kernel;
  float* z = acts_.front().get();
  be_.gemm(false, false, n, l0.out, embedded, 1.0f, vectors_.get(), embedded, w0, l0.out, 0.0f,
           z, l0.out);
  be_.gemm(false, false, n, l0.out, dense_in, 1.0f, dense_in_use_, dense_in,
           w0 + static_cast<std::size_t>(embedded) * l0.out, l0.out, 1.0f, z, l0.out);
  if (deep_.size() > 1) {
    be_.bias_activation_forward(z, params_in_use_ + l0.bias, n, l0.out, activation::relu);
  }
  for (std::size_t l = 1; l < deep_.size(); ++l) {
    float* out = acts_[l].get();
    be_.gemm(false, false, n, deep_[l].out, deep_[l].in, 1.0f, acts_[l - 1].get(), deep_[l].in,
             params_in_use_ + deep_[l].kernel, deep_[l].out, 0.0f, out, deep_[l].out);
    if (l + 1 < deep_.size()) {
      be_.bias_activation_forward(out, params_in_use_ + deep_[l].bias, n, deep_[l].out,
                                  deep_activation(l, deep_.size()));
    }
  }
  // The logits before the output bias: deep, then += Σ_f w_f, += a·dense, += fm.
  float* logits = acts_.back().get();  // n×1
  be_.gemm(false, false, n, 1, fields, 1.0f, weights_.get(), fields, ones_.get(), 1, 1.0f, logits,
           1);
  be_.gemm(false, false, n, 1, dense_in, 1.0f, dense_in_use_, dense_in, params_in_use_ + linear_,
           1, 1.0f, logits, 1);
  if (shape_.fm) {
    be_.fm_interaction_forward(vectors_.get(), n, fields, dim, fm_.get());
    be_.gemm(false, false, n, 1, 1, 1.0f, fm_.get(), 1, ones_.get(), 1, 1.0f, logits, 1);
  }
  be_.bias_activation_forward(logits, params_in_use_ + deep_.back().bias, n, 1,
                              activation::identity);
  return logits;
}

binary_loss_stats wide_deep::train_step(const float* dense, const float* labels,
                                        const ctr_rows& embeddings, const ctr_rows& weights,
                                        int n, float* grad_host, float* embedding_grads,
                                        float* weight_grads, const ctr_bags* bags,
                                        const float* sample_weights) {
  if (n <= 0 || n > max_batch_) {
    throw std::invalid_argument("wide_deep::train_step: batch of " + std::to_string(n) +
                                " samples, must be in [1, " + std::to_string(max_batch_) + "]");
  }
  check_rows("embeddings", embeddings, n, bags);
  check_rows("wide", weights, n, bags);
  const int fields = shape_.fields, dim = shape_.dim, dense_in = shape_.dense_in;
  const int lookups = n * fields;
  stage_rows(embeddings, weights, true);
  if (bags) stage_bags(embeddings, weights, *bags, n);
  float* logits = forward_logits(dense, embeddings, weights, 0, n, bags != nullptr);
  be_.copy_to_device(labels_.get(), labels, static_cast<std::size_t>(n) * sizeof(float));
  float* dz = deltas_.back().get();  // n×1: ∂(mean loss)/∂z
  binary_loss_stats stats = be_.sigmoid_cross_entropy(
    logits, labels_.get(), n, dz, 1.0f / static_cast<float>(n), nullptr);
  if (sample_weights) {  // each sample's loss and gradient times its weight
    be_.scale_rows(dz, bag_buffers_.stage_weights(sample_weights, n), n, 1);
    host_logits_.resize(static_cast<std::size_t>(n));
    be_.copy_to_host(host_logits_.data(), logits, static_cast<std::size_t>(n) * sizeof(float));
    stats.loss_sum = weighted_loss_sum(host_logits_.data(), labels, sample_weights, n);
  }
  // The rows' gradient from each field's gradient (lookups × width): summed by row, through
  // the bags' pooling first when there are bags.
  const int keys = bags ? bags->offsets[lookups] : lookups;
  const auto scatter = [&](const float* dfields, const int32_t* index, const int32_t* bag_index,
                           int width, float* drows, int count) {
    if (!bags) {
      be_.embedding_scatter_add(dfields, index, lookups, width, drows, count);
      return;
    }
    float* dkeys = bag_buffers_.keys_scratch(static_cast<std::size_t>(keys) * width);
    be_.embedding_bag_expand(dfields, bag_buffers_.offsets(), bag_buffers_.scale(), lookups,
                             width, dkeys);
    be_.embedding_scatter_add(dkeys, bag_index, keys, width, drows, count);
  };
  float* grads = in_host_ ? grad_host : grads_.get();  // every value is written below

  // The first-order part: a's gradient denseᵀ·dz; each use of a wide weight gets dz.
  be_.gemm(true, false, dense_in, 1, n, 1.0f, dense_in_use_, dense_in, dz, 1, 0.0f,
           grads + linear_, 1);
  be_.gemm(false, false, n, fields, 1, 1.0f, dz, 1, ones_.get(), fields, 0.0f, dweights_.get(),
           fields);
  scatter(dweights_.get(), windex_.get(), bag_windex_.get(), 1, dwtable_.get(), weights.count);

  // Deep MLP backwards, down to layer 0's delta.
  for (std::size_t l = deep_.size(); l-- > 1;) {
    mlp_layer_grads(be_, grads, deep_[l], acts_[l - 1].get(), deltas_[l].get(), n);
    mlp_layer_input_delta(be_, params_in_use_, deep_[l], deltas_[l].get(), acts_[l - 1].get(), n,
                          deltas_[l - 1].get());
  }
  const mlp_layer& l0 = deep_.front();
  const float* delta = deltas_.front().get();  // n×out
  const int embedded = fields * dim;
  float* dw = grads + l0.kernel;
  be_.gemm(true, false, embedded, l0.out, n, 1.0f, vectors_.get(), embedded, delta, l0.out, 0.0f,
           dw, l0.out);
  be_.gemm(true, false, dense_in, l0.out, n, 1.0f, dense_in_use_, dense_in, delta, l0.out, 0.0f,
           dw + static_cast<std::size_t>(embedded) * l0.out, l0.out);
  be_.bias_backward(grads + l0.bias, delta, n, l0.out);

  // The embeddings' gradient per use: the FM's (DeepFM), plus the deep MLP's.
  if (shape_.fm) be_.fm_interaction_backward(vectors_.get(), dz, n, fields, dim, dvectors_.get());
  be_.gemm(false, true, n, embedded, l0.out, 1.0f, delta, l0.out, params_in_use_ + l0.kernel,
           l0.out, shape_.fm ? 1.0f : 0.0f, dvectors_.get(), embedded);
  scatter(dvectors_.get(), index_.get(), bag_index_.get(), dim, dtable_.get(), embeddings.count);

  be_.copy_to_host(embedding_grads, dtable_.get(),
                   static_cast<std::size_t>(embeddings.count) * dim * sizeof(float));
  be_.copy_to_host(weight_grads, dwtable_.get(),
                   static_cast<std::size_t>(weights.count) * sizeof(float));
  if (!in_host_) be_.copy_to_host(grad_host, grads_.get(), param_count_ * sizeof(float));
  return stats;
}

void wide_deep::predict_logits(const float* dense, const ctr_rows& embeddings,
                               const ctr_rows& weights, int n, float* logits_host,
                               const ctr_bags* bags) {
  score(dense, embeddings, weights, n, logits_host, false, bags);
}

void wide_deep::predict(const float* dense, const ctr_rows& embeddings, const ctr_rows& weights,
                        int n, float* probs_host, const ctr_bags* bags) {
  score(dense, embeddings, weights, n, probs_host, true, bags);
}

void wide_deep::score(const float* dense, const ctr_rows& embeddings, const ctr_rows& weights,
                      int n, float* out_host, bool probabilities, const ctr_bags* bags) {
  if (n < 0) throw std::invalid_argument("wide_deep::predict: negative sample count");
  if (n == 0) return;
  check_rows("embeddings", embeddings, n, bags);
  check_rows("wide", weights, n, bags);
  stage_rows(embeddings, weights, false);
  if (bags) stage_bags(embeddings, weights, *bags, n);
  for (int begin = 0; begin < n; begin += max_batch_) {
    const int chunk = std::min(max_batch_, n - begin);
    float* logits = forward_logits(dense + static_cast<std::size_t>(begin) * shape_.dense_in,
                                   embeddings, weights, begin, chunk, bags != nullptr);
    if (probabilities) be_.sigmoid(logits, chunk, logits);  // in place
    be_.copy_to_host(out_host + begin, logits, static_cast<std::size_t>(chunk) * sizeof(float));
  }
}

} // namespace actorps
