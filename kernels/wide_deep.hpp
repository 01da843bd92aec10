// Wide & Deep (Cheng et al. 2016) and DeepFM (Guo et al. 2017), the CTR models most teams start
// from, written once against the backend interface like kernels/dlrm.
//
// One sample is `dense_in` dense features plus, per categorical field, one embedding row (dim
// floats, table "embeddings") and one wide weight (one float, table "wide"). The model:
//   wide = Σ_f w_f + a·dense                     the first-order (linear) part
//   fm   = Σ_{i<j} e_i·e_j                       DeepFM only: the factorization machine's
//                                                second-order term over the field embeddings
//   deep = MLP(concat(e_0, …, e_{fields−1}, dense))
//                                                fields·dim + dense_in → hidden… → 1, ReLU on
//                                                hidden layers, identity on the last
//   z    = wide + fm + deep;  loss = sigmoid cross-entropy of z against the 0/1 label
//
// Dense parameter layout (the flat host vector, in this order): "linear/kernel" [dense_in, 1]
// (a), then for each deep layer l (in_l → out_l) "deep<l>/kernel" [in_l, out_l] row-major and
// "deep<l>/bias" [out_l]. Rows [0, fields·dim) of "deep0/kernel" multiply the embeddings, field
// by field, rows [fields·dim, fields·dim + dense_in) the dense features. The deep output's bias
// is the model's only bias. The rows of both tables are not dense parameters: each call gets
// the batch's rows and returns their gradients.
#pragma once

#include "kernels/backend.hpp"
#include "kernels/ctr_bags.hpp"
#include "kernels/mlp_layers.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace actorps {

/// A Wide & Deep or DeepFM model's sizes.
struct wide_deep_shape {
  int dense_in = 13;                   ///< dense features per sample
  int fields = 26;                     ///< categorical fields, one row of each table each
  int dim = 16;                        ///< embedding width
  std::vector<int> hidden = {256, 128};  ///< the deep MLP's hidden widths
  bool fm = false;                     ///< DeepFM: add the second-order term

  /// The deep MLP's widths, input and output included: {fields·dim + dense_in, hidden…, 1}.
  std::vector<int> deep_layers() const;
};

/// Throws std::invalid_argument unless every size is positive (dense_in, fields, dim and each
/// hidden width ≥ 1).
void validate_wide_deep_shape(const wide_deep_shape& shape);

/// The number of dense parameters (the layout above).
std::size_t wide_deep_parameter_count(const wide_deep_shape& shape);

/// The dense tensors in layout order, each with its name ("linear/kernel", "deep0/kernel",
/// "deep0/bias", …) and shape ([in, out] for a kernel, [out] for a bias).
std::vector<std::pair<std::string, std::vector<int64_t>>> wide_deep_tensors(
  const wide_deep_shape& shape);

/// One table's rows for a batch: `count` rows of the table's width, and for each sample and
/// field (n×fields, sample by sample) the row it reads, in [0, count).
struct ctr_rows {
  const float* values = nullptr;  ///< count × width, host memory
  int count = 0;
  const int32_t* index = nullptr;  ///< n × fields
};

class wide_deep {
public:
  /// `max_batch` bounds the samples of a train_step and the chunks predict runs in.
  wide_deep(backend& be, wide_deep_shape shape, int max_batch);

  const wide_deep_shape& shape() const { return shape_; }
  std::size_t parameter_count() const { return param_count_; }

  /// The flat host parameters the next calls run on, as dlrm::set_parameters.
  void set_parameters(const float* host_params);

  /// Forward and backward on n ≤ max_batch samples, all inputs on the host: dense
  /// (n×dense_in), labels (n, 0 or 1), the batch's embedding rows (width dim) and wide weights
  /// (width 1). Writes the gradient of the *mean* loss over the batch into grad_host
  /// (parameter_count()), embedding_grads (embeddings.count × dim) and weight_grads
  /// (weights.count): each row's gradient summed over every place it is used. Throws
  /// std::invalid_argument, before queueing any work, for n outside [1, max_batch] or an index
  /// outside its table's rows.
  ///
  /// With `bags` (multi-hot fields) both tables' index holds bags->offsets[n·fields] entries and
  /// each field of a sample reads the pool of its bag's rows (ctr_bags), as dlrm::train_step.
  /// With `sample_weights` (n), sample r's loss and gradient are multiplied by its weight.
  binary_loss_stats train_step(const float* dense, const float* labels, const ctr_rows& embeddings,
                               const ctr_rows& weights, int n, float* grad_host,
                               float* embedding_grads, float* weight_grads,
                               const ctr_bags* bags = nullptr,
                               const float* sample_weights = nullptr);

  /// Inference over any n samples (in chunks of max_batch), inputs as for train_step: writes
  /// the logits z into logits_host (n). Throws std::invalid_argument, before queueing any
  /// work, for an index outside its table's rows.
  void predict_logits(const float* dense, const ctr_rows& embeddings, const ctr_rows& weights,
                      int n, float* logits_host, const ctr_bags* bags = nullptr);
  /// As predict_logits, writing the probabilities sigmoid(z).
  void predict(const float* dense, const ctr_rows& embeddings, const ctr_rows& weights, int n,
               float* probs_host, const ctr_bags* bags = nullptr);

private:
  void score(const float* dense, const ctr_rows& embeddings, const ctr_rows& weights, int n,
             float* out_host, bool probabilities, const ctr_bags* bags);
  /// Throws std::invalid_argument naming the first entry of rows.index (n×fields, or the bags'
  /// keys) outside [0, rows.count).
  void check_rows(const char* table, const ctr_rows& rows, int n, const ctr_bags* bags) const;
  /// The bag path: both tables' index of n samples' bags, and the bags, to the backend.
  void stage_bags(const ctr_rows& embeddings, const ctr_rows& weights, const ctr_bags& bags,
                  int n);
  /// Copies both tables' rows to the backend (growing their buffers when needed).
  void stage_rows(const ctr_rows& embeddings, const ctr_rows& weights, bool for_training);
  /// Runs the model on n ≤ max_batch samples whose rows are staged, with checked indexes
  /// (index at sample `begin`; with bags, the staged bags from sample `begin`); returns the
  /// logits (backend memory).
  float* forward_logits(const float* dense, const ctr_rows& embeddings, const ctr_rows& weights,
                        int begin, int n, bool bags);

  backend& be_;
  wide_deep_shape shape_;
  int max_batch_;
  std::size_t param_count_ = 0;
  std::size_t linear_ = 0;  // offset of "linear/kernel"
  std::vector<mlp_layer> deep_;
  const bool in_host_;
  device_buffer<float> params_, grads_, dense_, labels_;
  const float* params_in_use_ = nullptr;
  const float* dense_in_use_ = nullptr;
  device_buffer<float> table_, dtable_, wtable_, dwtable_;  // the rows and their gradients
  std::size_t table_rows_ = 0, dtable_rows_ = 0, wtable_rows_ = 0, dwtable_rows_ = 0;
  device_buffer<int32_t> index_, windex_;  // max_batch × fields each
  device_buffer<float> vectors_, dvectors_;  // max_batch × fields × dim: the gathered embeddings
  device_buffer<float> weights_, dweights_;  // max_batch × fields: the gathered wide weights
  device_buffer<float> ones_;                // max(fields, 1) ones, for sums by gemm
  device_buffer<float> fm_;                  // max_batch: the second-order terms
  std::vector<device_buffer<float>> acts_, deltas_;  // every deep layer's output, n × out
  ctr_bag_buffers bag_buffers_;              // the bag path's offsets, scales and scratch
  device_buffer<int32_t> bag_index_, bag_windex_;  // both tables' index of every bag's keys
  std::vector<float> host_logits_;           // a weighted batch's logits, for its loss sum
};

} // namespace actorps
