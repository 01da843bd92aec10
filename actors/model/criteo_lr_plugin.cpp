#include "actors/model/criteo_lr_plugin.hpp"

#include "actors/model/criteo_model.hpp"
#include "actors/model/sparse_lr_plugin.hpp"
#include "actors/ps/model_registry.hpp"
#include "kernels/sparse_logistic.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace actorps {

namespace {

/// The logits and gradients of the wide model on one batch. Each sample is a row of the
/// sparse-logistic kernels: its keys, each of value 1 (a multi-hot field's keys: its bag's
/// pooling scale, 1 or 1/length); the dense features add w·x.
class wide_model {
public:
  explicit wide_model(const ctr_layout& layout) : layout_(layout) {}

  /// z (rows) of the batch `b`, its table rows `t` (values by inverse) and dense parameters
  /// (params: dense/kernel [dense], then bias).
  const std::vector<float>& logits(const criteo_batch& b, const table_rows& t,
                                   const float* params) {
    const std::size_t n = b.rows();
    const int dense_in = layout_.dense;
    const auto fields = static_cast<std::size_t>(layout_.fields);
    if (!b.offsets.empty()) {  // each sample's keys: its bags', at their pooling scale
      const ctr_bags* bags = bags_.of(b);
      offsets_.resize(n + 1);
      for (std::size_t r = 0; r <= n; ++r) offsets_[r] = b.offsets[r * fields];
      values_.resize(b.keys.size());
      for (std::size_t bag = 0; bag < n * fields; ++bag)
        for (auto k = b.offsets[bag]; k < b.offsets[bag + 1]; ++k) values_[k] = bags->scale[bag];
      single_ = 0;
    } else if (single_ != n) {
      offsets_.resize(n + 1);
      for (std::size_t r = 0; r <= n; ++r) offsets_[r] = r * fields;
      values_.assign(n * fields, 1.0f);
      single_ = n;
    }
    z_.resize(n);
    sparse_logits(offsets_.data(), n, values_.data(), t.inverse.data(), t.values.data(),
                  params[dense_in], z_.data());
    for (std::size_t r = 0; r < n; ++r) {
      double dot = 0;
      for (int j = 0; j < dense_in; ++j) dot += double(params[j]) * b.dense[r * dense_in + j];
      z_[r] += static_cast<float>(dot);
    }
    return z_;
  }

  /// After logits(): adds the mean loss's gradient to t.grads, writes the dense one into grad
  /// (dense/kernel, bias) and returns the loss sum; each sample's loss and gradient times its
  /// weight when the batch has weights.
  double gradient(const criteo_batch& b, table_rows& t, float* grad) {
    const std::size_t n = b.rows();
    const int dense_in = layout_.dense;
    const float* weights = sample_weights(b);
    logistic_sums sums;
    if (!weights) {
      sums = add_logistic_gradient(offsets_.data(), n, values_.data(), t.inverse.data(),
                                   b.labels.data(), z_.data(), t.grads.data());
    } else {
      for (std::size_t r = 0; r < n; ++r) {
        const double z = z_[r], y = b.labels[r];
        const double g = weights[r] * (stable_sigmoid(z) - y) / double(n);
        sums.loss_sum +=
          weights[r] * (std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::fabs(z))));
        sums.bias_grad += g;
        for (auto k = offsets_[r]; k < offsets_[r + 1]; ++k)
          t.grads[t.inverse[k]] += static_cast<float>(values_[k] * g);
      }
    }
    std::vector<double> dense(static_cast<std::size_t>(dense_in), 0.0);
    for (std::size_t r = 0; r < n; ++r) {
      double g = (stable_sigmoid(z_[r]) - b.labels[r]) / double(n);
      if (weights) g *= weights[r];
      for (int j = 0; j < dense_in; ++j) dense[j] += g * b.dense[r * dense_in + j];
    }
    for (int j = 0; j < dense_in; ++j) grad[j] = static_cast<float>(dense[j]);
    grad[dense_in] = static_cast<float>(sums.bias_grad);
    return sums.loss_sum;
  }

private:
  ctr_layout layout_;
  batch_bags bags_;
  std::size_t single_ = 0;  // the rows offsets_ holds for single-valued fields (0: none)
  std::vector<uint64_t> offsets_;
  std::vector<float> values_, z_;
};

class criteo_lr_trainer : public trainer {
public:
  criteo_lr_trainer(const ctr_layout& layout, const trainer_context& ctx)
    : data_(ctr_training_batches(ctx, layout)), model_(layout) {}

  void keys(int64_t clock, std::vector<std::vector<uint64_t>>& per_table) override {
    name_criteo_keys("lr", data_.at(clock), per_table);
  }

  step_loss step(int64_t clock, const float* params, float* grad,
                 std::vector<table_rows>& tables) override {
    const auto& b = data_.at(clock);
    check_one_table("lr", tables, 1, b.keys.size(), true);
    model_.logits(b, tables[0], params);
    return {model_.gradient(b, tables[0], grad), static_cast<int64_t>(b.rows())};
  }

private:
  ctr_batches data_;
  wide_model model_;
};

class criteo_lr_evaluation : public evaluation {
public:
  criteo_lr_evaluation(const ctr_layout& layout, std::shared_ptr<const dataset> test)
    : test_(std::move(test)), split_(criteo_test_split(test_, layout)), model_(layout) {}

  void keys(std::vector<std::vector<uint64_t>>& per_table) override {
    name_criteo_keys("lr", split_, per_table);
  }

  eval_metrics evaluate(const float* params, const std::vector<table_rows>& tables) override {
    check_one_table("lr", tables, 1, split_.keys.size(), false);
    const auto& z = model_.logits(split_, tables[0], params);
    return binary_metrics_from_logits(z.data(), split_.labels.data(), split_.rows(),
                                      test_->groups);
  }

private:
  std::shared_ptr<const dataset> test_;
  const criteo_batch& split_;
  wide_model model_;
};

class criteo_lr_plugin : public criteo_plugin {
public:
  criteo_lr_plugin(row_optimizer_kind kind, const ctr_layout& layout)
    : criteo_plugin(layout), kind_(kind) {}

  model_spec spec() const override { return criteo_lr_model(kind_, layout()); }
  std::unique_ptr<trainer> make_trainer(const trainer_context& ctx) const override {
    return std::make_unique<criteo_lr_trainer>(layout(), ctx);
  }
  std::unique_ptr<evaluation> make_evaluation(std::shared_ptr<const dataset> test) const override {
    return std::make_unique<criteo_lr_evaluation>(layout(), std::move(test));
  }

protected:
  std::unique_ptr<model_plugin> with_layout(const ctr_layout& layout) const override {
    return std::make_unique<criteo_lr_plugin>(kind_, layout);
  }

private:
  row_optimizer_kind kind_;
};

} // namespace

model_spec criteo_lr_model(row_optimizer_kind kind, const ctr_layout& layout) {
  model_spec model;
  model.name = "lr:" + std::string(to_string(kind)) + layout_suffix(layout);
  model.tensors.push_back({"dense/kernel", {uint32_t(layout.dense)}, tensor_init::zeros, 0});
  model.tensors.push_back({"bias", {1}, tensor_init::zeros, 0});
  sparse_table_config wide;
  wide.dim = 1;
  wide.init = row_init::zeros;
  wide.optimizer = sparse_lr_optimizer(kind);
  model.sparse_tables.push_back({"wide", wide});
  return model;
}

std::unique_ptr<model_plugin> make_criteo_lr_plugin(const std::string& text) {
  std::string args = text;
  ctr_layout layout;
  take_layout(args, layout);
  if (args.empty() || args == "ftrl")
    return std::make_unique<criteo_lr_plugin>(row_optimizer_kind::ftrl, layout);
  if (args == "adagrad")
    return std::make_unique<criteo_lr_plugin>(row_optimizer_kind::adagrad, layout);
  throw model_error("lr:" + text + ": the wide table's optimizer must be ftrl (the default) or "
                    "adagrad, e.g. lr:adagrad (and a last part DENSExFIELDS for rows other than "
                    "Criteo's)");
}

} // namespace actorps
