// DLRM (Naumov et al. 2019), the click-through-rate model of the CTR runs, written once against the
// backend interface like kernels/mlp.
//
// One sample is `dense_in` dense features plus one embedding row (dim floats) per categorical
// field. The model:
//   x0   = bottom MLP(dense)                     dense_in → bottom… → dim, ReLU on every layer
//   v    = (x0, e_0, …, e_{fields−1})            t = fields + 1 vectors of dim, fields in order
//   dots = the t(t−1)/2 dot products v_i·v_j, i > j, in the order of kernels/ctr_math.hpp:
//          (1,0), (2,0), (2,1), (3,0), …, pair (i, j) at i(i−1)/2 + j
//   z    = top MLP(concat(x0, dots))             dim + pairs → top… → 1, ReLU on hidden layers,
//                                                identity on the last
//   loss = sigmoid cross-entropy of z against the 0/1 label; p = sigmoid(z)
//
// Dense parameter layout (the flat host vector, in this order): for each bottom layer l
// (in_l → out_l), "bottom<l>/kernel" [in_l, out_l] row-major, then "bottom<l>/bias" [out_l];
// then the same for each top layer, "top<l>/kernel" and "top<l>/bias". Rows [0, dim) of
// "top0/kernel" multiply x0, rows [dim, dim + pairs) the dots. The embedding rows are not dense
// parameters: each call gets the batch's rows and returns their gradients.
#pragma once

#include "kernels/backend.hpp"
#include "kernels/ctr_bags.hpp"
#include "kernels/mlp_layers.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace actorps {

/// A DLRM's sizes. t = fields + 1 vectors enter the interaction.
struct dlrm_shape {
  int dense_in = 13;             ///< dense features per sample
  int fields = 26;               ///< categorical fields, one embedding row each
  int dim = 16;                  ///< embedding width, also the bottom MLP's output width
  std::vector<int> bottom = {64, 32};  ///< bottom hidden widths: dense_in → bottom… → dim
  std::vector<int> top = {64, 32};     ///< top hidden widths: dim + pairs → top… → 1

  /// t = fields + 1: the bottom output, then one embedding per field.
  int vectors() const { return fields + 1; }
  /// t(t−1)/2, the interaction's outputs.
  int pairs() const { return vectors() * (vectors() - 1) / 2; }
  /// The bottom MLP's widths, input and output included: {dense_in, bottom…, dim}.
  std::vector<int> bottom_layers() const;
  /// The top MLP's widths, input and output included: {dim + pairs, top…, 1}.
  std::vector<int> top_layers() const;
};

/// Throws std::invalid_argument unless every size is positive (dense_in, fields, dim and each
/// hidden width ≥ 1).
void validate_dlrm_shape(const dlrm_shape& shape);

/// The number of dense parameters (the layout above).
std::size_t dlrm_parameter_count(const dlrm_shape& shape);

/// The dense tensors in layout order, each with its name ("bottom0/kernel", "bottom0/bias", …,
/// "top0/kernel", …) and shape ([in, out] for a kernel, [out] for a bias).
std::vector<std::pair<std::string, std::vector<int64_t>>> dlrm_tensors(const dlrm_shape& shape);

/// Seeded initial dense parameters: each MLP as kernels/parameter_init.hpp makes an MLP's
/// (He-uniform kernels, zero biases), the top one from a seed mixed from `seed`. Same bits on
/// every platform.
std::vector<float> dlrm_initial_parameters(const dlrm_shape& shape, uint64_t seed);

class dlrm {
public:
  /// `max_batch` bounds the samples of a train_step and the chunks predict runs in.
  dlrm(backend& be, dlrm_shape shape, int max_batch);

  const dlrm_shape& shape() const { return shape_; }
  std::size_t parameter_count() const { return param_count_; }

  /// The flat host parameters (parameter_count()) the next calls run on: copied into the
  /// backend's replica, or on a backend that computes in host memory (CPU) read where they are;
  /// there keep host_params alive and unchanged until the last call that uses them. (Likewise
  /// the dense features and the gradient: used in place there, as mlp does.)
  void set_parameters(const float* host_params);

  /// Forward and backward on n ≤ max_batch samples, all inputs on the host:
  /// dense (n×dense_in), labels (n, 0 or 1), rows (u×dim: the batch's distinct embedding rows),
  /// index (n×fields): index[r·fields + f] in [0, u) is the row of field f of sample r (rows
  /// may repeat). Writes the gradient of the *mean* loss over the batch into grad_host
  /// (parameter_count(), flat layout) and row_grad_host (u×dim: row k's gradient summed over
  /// every place it is used); returns the loss sums. Throws std::invalid_argument, before
  /// queueing any work, for n outside [1, max_batch] or an index outside [0, u).
  ///
  /// With `bags` (multi-hot fields), index holds bags->offsets[n·fields] entries and field f of
  /// sample r is the pool of its bag's rows (ctr_bags); each row's gradient sums its uses'
  /// share of the pooled gradient (scale · the pool's gradient). With `weights` (n), sample r's
  /// loss and gradient are multiplied by weights[r] (loss_sum is then the weighted sum).
  binary_loss_stats train_step(const float* dense, const float* labels, const float* rows, int u,
                               const int32_t* index, int n, float* grad_host,
                               float* row_grad_host, const ctr_bags* bags = nullptr,
                               const float* weights = nullptr);

  /// Inference over any n samples (in chunks of max_batch), inputs as for train_step: writes
  /// the probabilities of label 1, sigmoid(z), into probs_host (n). Throws
  /// std::invalid_argument, before queueing any work, for an index outside [0, u).
  void predict(const float* dense, const float* rows, int u, const int32_t* index, int n,
               float* probs_host, const ctr_bags* bags = nullptr);
  /// As predict, writing the logits z instead (exact AUC and log loss need no rounded σ).
  void predict_logits(const float* dense, const float* rows, int u, const int32_t* index, int n,
                      float* logits_host, const ctr_bags* bags = nullptr);

  /// One dense layer of either MLP within the flat layout.
  using layer = mlp_layer;

private:
  /// predict and predict_logits: z, or sigmoid(z) when `probabilities`.
  void score(const float* dense, const float* rows, int u, const int32_t* index, int n,
             float* out_host, bool probabilities, const ctr_bags* bags);
  /// The bag path's staging: the rows (u×dim) and the index of n samples' bags to the backend.
  void stage_bags(const float* rows, int u, const int32_t* index, const ctr_bags& bags, int n);
  /// Pools the bags of samples [begin, begin + n) into table_[0, n·fields).
  void pool_bags(int u, int begin, int n);
  /// Room in the embedding table buffers for u rows plus a chunk's bottom outputs.
  void reserve_rows(int u, bool for_training);
  /// Throws std::invalid_argument naming the first entry of index (n×fields, host) outside
  /// [0, u).
  void check_index(const int32_t* index, int u, int n) const;
  /// Copies the interaction's gather index, (u + r, index[r·fields + 0], …) per sample r, to
  /// the backend.
  void stage_index(const int32_t* index, int u, int n);
  /// Runs the model on n ≤ max_batch samples with checked indexes whose rows are already in
  /// table_[0, u); returns the logits (backend memory).
  float* forward_logits(const float* dense, int u, const int32_t* index, int n);

  backend& be_;
  dlrm_shape shape_;
  int max_batch_;
  std::size_t param_count_;
  std::vector<layer> bottom_, top_;
  const bool in_host_;  // be_.computes_in_host_memory(): host buffers are used in place
  // The backend's copies of the parameters, the gradient and the dense features; not allocated
  // in host memory, where the caller's own buffers are used.
  device_buffer<float> params_, grads_;
  device_buffer<float> dense_, labels_;
  const float* params_in_use_ = nullptr;  // params_, or the caller's host parameters
  const float* dense_in_use_ = nullptr;   // the dense features of the last forward_logits
  // table_ (u + max_batch)×dim: the batch's rows, then each sample's bottom output x0, so that
  // one gather builds the interaction's vectors; dtable_ the same rows' gradients.
  device_buffer<float> table_, dtable_;
  std::size_t table_rows_ = 0, dtable_rows_ = 0;
  // The bag path: the batch's distinct rows and their gradients, the keys' index, the bags'
  // offsets and scales; table_ then holds the pooled vectors in place of the rows, read
  // through identity_ (sample r, field f: row r·fields + f).
  ctr_bag_buffers bag_buffers_;
  device_buffer<float> bag_rows_, dbag_rows_;
  device_buffer<int32_t> bag_index_;
  std::size_t bag_rows_count_ = 0;            // u of the staged bags
  std::vector<int32_t> identity_;
  std::vector<float> host_logits_;            // a weighted batch's logits, for its loss sum
  device_buffer<int32_t> index_;              // max_batch × t: the gather index
  std::vector<int32_t> host_index_;           // its host staging copy
  device_buffer<float> vectors_, dvectors_;   // max_batch × t × dim
  device_buffer<float> dots_, ddots_;         // max_batch × pairs
  std::vector<device_buffer<float>> bottom_acts_, bottom_deltas_;  // hidden bottom layers
  std::vector<device_buffer<float>> top_acts_, top_deltas_;        // every top layer
};

} // namespace actorps
