// DLRM's forward and backward passes, written only against the backend interface so the same
// code runs on every backend.
//
// The interaction's t vectors per sample are built by one embedding_gather from table_, which
// holds the batch's u embedding rows followed by the n bottom outputs x0 (the bottom MLP's last
// layer writes straight into it): sample r gathers rows (u + r, index[r, 0], …). Backwards, one
// embedding_scatter_add of the vectors' gradient into dtable_ yields both the rows' gradients
// (dtable_[0, u)) and the interaction's part of dx0 (dtable_[u, u + n)), to which the top MLP's
// direct path is then added. The top MLP never concatenates its input: its first layer runs as
// two gemms, x0 against rows [0, dim) of its kernel and the dots against rows [dim, dim + pairs).
#include "kernels/dlrm.hpp"

#include "kernels/mlp_layers.hpp"
#include "kernels/parameter_init.hpp"
#include "actors/ps/splitmix64.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace actorps {
namespace {

void check_positive(const char* what, int value) {
  if (value <= 0) {
    throw std::invalid_argument(std::string("dlrm: ") + what + " is " + std::to_string(value) +
                                ", must be positive");
  }
}

std::vector<int> widths(int in, const std::vector<int>& hidden, int out) {
  std::vector<int> all{in};
  all.insert(all.end(), hidden.begin(), hidden.end());
  all.push_back(out);
  return all;
}

dlrm_shape checked(dlrm_shape shape, int max_batch) {
  validate_dlrm_shape(shape);
  check_positive("max_batch", max_batch);
  return shape;
}

} // namespace

std::vector<int> dlrm_shape::bottom_layers() const { return widths(dense_in, bottom, dim); }

std::vector<int> dlrm_shape::top_layers() const { return widths(dim + pairs(), top, 1); }

void validate_dlrm_shape(const dlrm_shape& shape) {
  check_positive("dense_in", shape.dense_in);
  check_positive("fields", shape.fields);
  check_positive("dim", shape.dim);
  for (std::size_t l = 0; l < shape.bottom.size(); ++l) {
    check_positive(("bottom width " + std::to_string(l)).c_str(), shape.bottom[l]);
  }
  for (std::size_t l = 0; l < shape.top.size(); ++l) {
    check_positive(("top width " + std::to_string(l)).c_str(), shape.top[l]);
  }
}

std::size_t dlrm_parameter_count(const dlrm_shape& shape) {
  validate_dlrm_shape(shape);
  std::size_t count = 0;
  mlp_layers_of(shape.bottom_layers(), count);
  mlp_layers_of(shape.top_layers(), count);
  return count;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> dlrm_tensors(const dlrm_shape& shape) {
  validate_dlrm_shape(shape);
  std::vector<std::pair<std::string, std::vector<int64_t>>> tensors;
  for (const char* stack : {"bottom", "top"}) {
    const std::vector<int> all =
      std::string(stack) == "bottom" ? shape.bottom_layers() : shape.top_layers();
    for (std::size_t l = 0; l + 1 < all.size(); ++l) {
      const std::string prefix = stack + std::to_string(l);
      tensors.push_back({prefix + "/kernel", {all[l], all[l + 1]}});
      tensors.push_back({prefix + "/bias", {all[l + 1]}});
    }
  }
  return tensors;
}

std::vector<float> dlrm_initial_parameters(const dlrm_shape& shape, uint64_t seed) {
  validate_dlrm_shape(shape);
  std::vector<float> params = initial_parameters(shape.bottom_layers(), seed);
  const std::vector<float> top = initial_parameters(shape.top_layers(), splitmix64_mix(seed));
  params.insert(params.end(), top.begin(), top.end());
  return params;
}

dlrm::dlrm(backend& be, dlrm_shape shape, int max_batch)
  : be_(be),
    shape_(checked(std::move(shape), max_batch)),
    max_batch_(max_batch),
    param_count_(0),
    in_host_(be.computes_in_host_memory()),
    bag_buffers_(be) {
  bottom_ = mlp_layers_of(shape_.bottom_layers(), param_count_);
  top_ = mlp_layers_of(shape_.top_layers(), param_count_);
  const std::size_t batch = static_cast<std::size_t>(max_batch_);
  const std::size_t t = static_cast<std::size_t>(shape_.vectors());
  const std::size_t dim = static_cast<std::size_t>(shape_.dim);
  for (std::size_t l = 0; l + 1 < bottom_.size(); ++l) {  // the last writes into table_
    bottom_acts_.emplace_back(be_, batch * bottom_[l].out);
    bottom_deltas_.emplace_back(be_, batch * bottom_[l].out);
  }
  for (const layer& ly : top_) {
    top_acts_.emplace_back(be_, batch * ly.out);
    top_deltas_.emplace_back(be_, batch * ly.out);
  }
  if (!in_host_) {
    params_ = device_buffer<float>(be_, param_count_);
    grads_ = device_buffer<float>(be_, param_count_);
    dense_ = device_buffer<float>(be_, batch * shape_.dense_in);
  }
  labels_ = device_buffer<float>(be_, batch);
  index_ = device_buffer<int32_t>(be_, batch * t);
  host_index_.resize(batch * t);
  vectors_ = device_buffer<float>(be_, batch * t * dim);
  dots_ = device_buffer<float>(be_, batch * shape_.pairs());
  // A batch has at most max_batch·fields distinct rows: sized for it, grown only when a
  // caller passes more (predict's rows span every chunk).
  reserve_rows(max_batch_ * shape_.fields, false);
}

void dlrm::set_parameters(const float* host_params) {
  if (in_host_) {
    params_in_use_ = host_params;
    return;
  }
  be_.copy_to_device(params_.get(), host_params, param_count_ * sizeof(float));
  params_in_use_ = params_.get();
}

void dlrm::reserve_rows(int u, bool for_training) {
  const std::size_t rows = static_cast<std::size_t>(u) + max_batch_;
  const std::size_t dim = static_cast<std::size_t>(shape_.dim);
  if (rows > table_rows_) {
    table_ = device_buffer<float>(be_, rows * dim);
    table_rows_ = rows;
  }
  if (for_training && rows > dtable_rows_) {
    if (dvectors_.size() == 0) {  // the backward's own buffers, made on the first train_step
      const std::size_t batch = static_cast<std::size_t>(max_batch_);
      dvectors_ = device_buffer<float>(be_, batch * shape_.vectors() * dim);
      ddots_ = device_buffer<float>(be_, batch * shape_.pairs());
    }
    dtable_ = device_buffer<float>(be_, rows * dim);
    dtable_rows_ = rows;
  }
}

void dlrm::check_index(const int32_t* index, int u, int n) const {
  const std::size_t entries = static_cast<std::size_t>(n) * shape_.fields;
  for (std::size_t i = 0; i < entries; ++i) {
    if (index[i] < 0 || index[i] >= u) {
      throw std::invalid_argument(
        "dlrm: index " + std::to_string(index[i]) + " of sample " +
        std::to_string(i / shape_.fields) + ", field " + std::to_string(i % shape_.fields) +
        " is not in [0, " + std::to_string(u) + ")");
    }
  }
}

void dlrm::stage_index(const int32_t* index, int u, int n) {
  const int fields = shape_.fields, t = shape_.vectors();
  for (int r = 0; r < n; ++r) {
    int32_t* sample = host_index_.data() + static_cast<std::size_t>(r) * t;
    sample[0] = u + r;  // x0 of sample r
    std::copy_n(index + static_cast<std::size_t>(r) * fields, fields, sample + 1);
  }
  be_.copy_to_device(index_.get(), host_index_.data(),
                     static_cast<std::size_t>(n) * t * sizeof(int32_t));
}

float* dlrm::forward_logits(const float* dense, int u, const int32_t* index, int n) {
  const int dim = shape_.dim, t = shape_.vectors(), pairs = shape_.pairs();
  stage_index(index, u, n);
  if (!params_in_use_) throw std::logic_error("dlrm: set_parameters was never called");
  if (in_host_) {
    dense_in_use_ = dense;
  } else {
    be_.copy_to_device(dense_.get(), dense,
                       static_cast<std::size_t>(n) * shape_.dense_in * sizeof(float));
    dense_in_use_ = dense_.get();
  }
  float* x0 = table_.get() + static_cast<std::size_t>(u) * dim;  // n×dim

  // Bottom MLP, ReLU on every layer: dense (n×dense_in) → x0 (n×dim).
  const float* a = dense_in_use_;
  for (std::size_t l = 0; l < bottom_.size(); ++l) {
    float* z = l + 1 < bottom_.size() ? bottom_acts_[l].get() : x0;
    mlp_layer_forward(be_, params_in_use_, bottom_[l], a, n, z, activation::relu);
    a = z;
  }

  // Interaction: vectors (n×t×dim) = (x0, e_0, …) per sample; dots (n×pairs).
  be_.embedding_gather(table_.get(), u + n, dim, index_.get(), n * t, vectors_.get());
  be_.dot_interaction_forward(vectors_.get(), n, t, dim, dots_.get());

  // Top MLP. Layer 0's input is concat(x0, dots): z = x0·W[0:dim] + dots·W[dim:] + b.
  const layer& first = top_.front();
  const float* w = params_in_use_ + first.kernel;
  float* z = top_acts_.front().get();
  be_.gemm(false, false, n, first.out, dim, 1.0f, x0, dim, w, first.out, 0.0f, z, first.out);
  be_.gemm(false, false, n, first.out, pairs, 1.0f, dots_.get(), pairs,
           w + static_cast<std::size_t>(dim) * first.out, first.out, 1.0f, z, first.out);
  const auto top_activation = [&](std::size_t l) {
    return l + 1 < top_.size() ? activation::relu : activation::identity;
  };
  be_.bias_activation_forward(z, params_in_use_ + first.bias, n, first.out, top_activation(0));
  for (std::size_t l = 1; l < top_.size(); ++l) {
    mlp_layer_forward(be_, params_in_use_, top_[l], top_acts_[l - 1].get(), n,
                      top_acts_[l].get(), top_activation(l));
  }
  return top_acts_.back().get();  // n×1
}

void dlrm::stage_bags(const float* rows, int u, const int32_t* index, const ctr_bags& bags,
                      int n) {
  const auto dim = static_cast<std::size_t>(shape_.dim);
  const int count = n * shape_.fields;
  if (bag_rows_.size() < std::max<std::size_t>(u, 1) * dim)
    bag_rows_ = device_buffer<float>(be_, std::max<std::size_t>(u, 1) * dim);
  if (u > 0)
    be_.copy_to_device(bag_rows_.get(), rows, static_cast<std::size_t>(u) * dim * sizeof(float));
  bag_buffers_.stage_index(bag_index_, index, static_cast<std::size_t>(bags.offsets[count]));
  bag_rows_count_ = static_cast<std::size_t>(u);
  bag_buffers_.stage(bags, count);
  if (identity_.size() < static_cast<std::size_t>(max_batch_) * shape_.fields) {
    identity_.resize(static_cast<std::size_t>(max_batch_) * shape_.fields);
    for (std::size_t i = 0; i < identity_.size(); ++i) identity_[i] = static_cast<int32_t>(i);
  }
}

void dlrm::pool_bags(int u, int begin, int n) {
  const std::size_t first = static_cast<std::size_t>(begin) * shape_.fields;
  be_.embedding_bag_pool(bag_rows_.get(), u, shape_.dim, bag_index_.get(),
                         bag_buffers_.offsets() + first, bag_buffers_.scale() + first,
                         n * shape_.fields, table_.get());
}

binary_loss_stats dlrm::train_step(const float* dense, const float* labels, const float* rows,
                                   int u, const int32_t* index, int n, float* grad_host,
                                   float* row_grad_host, const ctr_bags* bags,
                                   const float* weights) {
  if (n <= 0 || n > max_batch_) {
    throw std::invalid_argument("dlrm::train_step: batch of " + std::to_string(n) +
                                " samples, must be in [1, " + std::to_string(max_batch_) + "]");
  }
  if (u < 0) throw std::invalid_argument("dlrm::train_step: negative row count");
  if (bags)
    check_bags("dlrm", *bags, index, u, n, shape_.fields);
  else
    check_index(index, u, n);
  const int dim = shape_.dim, t = shape_.vectors(), pairs = shape_.pairs();
  // table_'s rows before the bottom outputs: the batch's rows, or each bag's pool
  const int table_rows = bags ? n * shape_.fields : u;
  reserve_rows(table_rows, true);
  if (bags) {
    stage_bags(rows, u, index, *bags, n);
    pool_bags(u, 0, n);
    if (dbag_rows_.size() < std::max<std::size_t>(u, 1) * dim)
      dbag_rows_ = device_buffer<float>(be_, std::max<std::size_t>(u, 1) * dim);
  } else {
    be_.copy_to_device(table_.get(), rows, static_cast<std::size_t>(u) * dim * sizeof(float));
  }
  const float* logits = forward_logits(dense, table_rows, bags ? identity_.data() : index, n);
  be_.copy_to_device(labels_.get(), labels, static_cast<std::size_t>(n) * sizeof(float));
  binary_loss_stats stats =
    be_.sigmoid_cross_entropy(logits, labels_.get(), n, top_deltas_.back().get(),
                              1.0f / static_cast<float>(n), nullptr);
  if (weights) {  // each sample's loss and gradient times its weight
    be_.scale_rows(top_deltas_.back().get(), bag_buffers_.stage_weights(weights, n), n, 1);
    host_logits_.resize(static_cast<std::size_t>(n));
    be_.copy_to_host(host_logits_.data(), logits, static_cast<std::size_t>(n) * sizeof(float));
    stats.loss_sum = weighted_loss_sum(host_logits_.data(), labels, weights, n);
  }
  u = table_rows;  // from here on, the rows of table_ and dtable_
  float* grads = in_host_ ? grad_host : grads_.get();  // every value is written below

  // Top MLP backwards; top_deltas_.back() holds ∂(mean loss)/∂logits.
  for (std::size_t l = top_.size(); l-- > 1;) {
    mlp_layer_grads(be_, grads, top_[l], top_acts_[l - 1].get(), top_deltas_[l].get(), n);
    mlp_layer_input_delta(be_, params_in_use_, top_[l], top_deltas_[l].get(),
                          top_acts_[l - 1].get(), n, top_deltas_[l - 1].get());
  }
  // Top layer 0, input concat(x0, dots): its kernel's gradient and ddots, block by block.
  const layer& first = top_.front();
  const float* delta = top_deltas_.front().get();  // n×out
  const float* x0 = table_.get() + static_cast<std::size_t>(u) * dim;
  const float* w_dots = params_in_use_ + first.kernel + static_cast<std::size_t>(dim) * first.out;
  float* dw = grads + first.kernel;
  be_.gemm(true, false, dim, first.out, n, 1.0f, x0, dim, delta, first.out, 0.0f, dw,
           first.out);
  be_.gemm(true, false, pairs, first.out, n, 1.0f, dots_.get(), pairs, delta, first.out, 0.0f,
           dw + static_cast<std::size_t>(dim) * first.out, first.out);
  be_.bias_backward(grads + first.bias, delta, n, first.out);
  be_.gemm(false, true, n, pairs, first.out, 1.0f, delta, first.out, w_dots, first.out, 0.0f,
           ddots_.get(), pairs);

  // Interaction backwards, then the gather's adjoint: dtable_ rows [0, u) are the embedding
  // rows' gradients, rows [u, u + n) the dots' part of dx0.
  be_.dot_interaction_backward(vectors_.get(), ddots_.get(), n, t, dim, dvectors_.get());
  be_.embedding_scatter_add(dvectors_.get(), index_.get(), n * t, dim, dtable_.get(), u + n);
  // dx0 += delta · W[0:dim]ᵀ (x0's direct path into the top MLP), then through x0's ReLU.
  float* dx0 = dtable_.get() + static_cast<std::size_t>(u) * dim;
  be_.gemm(false, true, n, dim, first.out, 1.0f, delta, first.out, params_in_use_ + first.kernel,
           first.out, 1.0f, dx0, dim);
  be_.activation_backward(dx0, x0, static_cast<std::size_t>(n) * dim, activation::relu);

  // Bottom MLP backwards from dx0.
  for (std::size_t l = bottom_.size(); l-- > 0;) {
    const float* a = l == 0 ? dense_in_use_ : bottom_acts_[l - 1].get();
    const float* d = l + 1 == bottom_.size() ? dx0 : bottom_deltas_[l].get();
    mlp_layer_grads(be_, grads, bottom_[l], a, d, n);
    if (l > 0) {
      mlp_layer_input_delta(be_, params_in_use_, bottom_[l], d, a, n,
                            bottom_deltas_[l - 1].get());
    }
  }

  if (bags) {  // each pool's gradient back to its bag's keys, then summed per row
    const int bag_count = n * shape_.fields;
    const auto keys = static_cast<std::size_t>(bags->offsets[bag_count]);
    float* dkeys = bag_buffers_.keys_scratch(keys * dim);
    be_.embedding_bag_expand(dtable_.get(), bag_buffers_.offsets(), bag_buffers_.scale(),
                             bag_count, dim, dkeys);
    const int rows_in = static_cast<int>(bag_rows_count_);
    be_.embedding_scatter_add(dkeys, bag_index_.get(), static_cast<int>(keys), dim,
                              dbag_rows_.get(), rows_in);
    be_.copy_to_host(row_grad_host, dbag_rows_.get(),
                     static_cast<std::size_t>(rows_in) * dim * sizeof(float));
  } else {
    be_.copy_to_host(row_grad_host, dtable_.get(),
                     static_cast<std::size_t>(u) * dim * sizeof(float));
  }
  if (!in_host_) be_.copy_to_host(grad_host, grads_.get(), param_count_ * sizeof(float));
  return stats;
}

void dlrm::predict(const float* dense, const float* rows, int u, const int32_t* index, int n,
                   float* probs_host, const ctr_bags* bags) {
  score(dense, rows, u, index, n, probs_host, true, bags);
}

void dlrm::predict_logits(const float* dense, const float* rows, int u, const int32_t* index,
                          int n, float* logits_host, const ctr_bags* bags) {
  score(dense, rows, u, index, n, logits_host, false, bags);
}

void dlrm::score(const float* dense, const float* rows, int u, const int32_t* index, int n,
                 float* out_host, bool probabilities, const ctr_bags* bags) {
  if (n < 0) throw std::invalid_argument("dlrm::predict: negative sample count");
  if (u < 0) throw std::invalid_argument("dlrm::predict: negative row count");
  if (n == 0) return;
  if (bags) {
    check_bags("dlrm", *bags, index, u, n, shape_.fields);
    reserve_rows(max_batch_ * shape_.fields, false);
    stage_bags(rows, u, index, *bags, n);
  } else {
    check_index(index, u, n);
    reserve_rows(u, false);
    be_.copy_to_device(table_.get(), rows,
                       static_cast<std::size_t>(u) * shape_.dim * sizeof(float));
  }
  for (int begin = 0; begin < n; begin += max_batch_) {
    const int chunk = std::min(max_batch_, n - begin);
    if (bags) pool_bags(u, begin, chunk);
    float* logits =
      bags ? forward_logits(dense + static_cast<std::size_t>(begin) * shape_.dense_in,
                            chunk * shape_.fields, identity_.data(), chunk)
           : forward_logits(dense + static_cast<std::size_t>(begin) * shape_.dense_in, u,
                            index + static_cast<std::size_t>(begin) * shape_.fields, chunk);
    if (probabilities) be_.sigmoid(logits, chunk, logits);  // in place
    be_.copy_to_host(out_host + begin, logits,
                     static_cast<std::size_t>(chunk) * sizeof(float));
  }
}

} // namespace actorps
