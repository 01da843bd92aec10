#include "actors/model/criteo_lr_plugin.hpp"

#include "actors/model/criteo_model.hpp"
#include "actors/model/registry.hpp"
#include "actors/model/sparse_lr_plugin.hpp"
#include "kernels/sparse_logistic.hpp"

#include <vector>

namespace actorps {

namespace {

constexpr int fields = criteo_categorical_fields;
constexpr int dense_in = criteo_dense_fields;

/// The logits and gradients of the wide model on one batch. Each sample is a row of the
/// sparse-logistic kernels with its 26 keys of value 1; the integer features add w·x.
class wide_model {
public:
  /// z (rows) of the batch `b`, its table rows `t` (values by inverse) and dense parameters
  /// (params: dense/kernel [13], then bias).
  const std::vector<float>& logits(const criteo_batch& b, const table_rows& t,
                                   const float* params) {
    const std::size_t n = b.rows();
    if (offsets_.size() != n + 1) {
      offsets_.resize(n + 1);
      for (std::size_t r = 0; r <= n; ++r) offsets_[r] = r * fields;
      ones_.assign(n * fields, 1.0f);
    }
    z_.resize(n);
    sparse_logits(offsets_.data(), n, ones_.data(), t.inverse.data(), t.values.data(),
                  params[dense_in], z_.data());
    for (std::size_t r = 0; r < n; ++r) {
      double dot = 0;
      for (int j = 0; j < dense_in; ++j) dot += double(params[j]) * b.dense[r * dense_in + j];
      z_[r] += static_cast<float>(dot);
    }
    return z_;
  }

  /// After logits(): adds the mean loss's gradient to t.grads, writes the dense one into grad
  /// (dense/kernel, bias) and returns the loss sum.
  double gradient(const criteo_batch& b, table_rows& t, float* grad) {
    const std::size_t n = b.rows();
    auto sums = add_logistic_gradient(offsets_.data(), n, ones_.data(), t.inverse.data(),
                                      b.labels.data(), z_.data(), t.grads.data());
    std::vector<double> dense(dense_in, 0.0);
    for (std::size_t r = 0; r < n; ++r) {
      const double g = (stable_sigmoid(z_[r]) - b.labels[r]) / double(n);
      for (int j = 0; j < dense_in; ++j) dense[j] += g * b.dense[r * dense_in + j];
    }
    for (int j = 0; j < dense_in; ++j) grad[j] = static_cast<float>(dense[j]);
    grad[dense_in] = static_cast<float>(sums.bias_grad);
    return sums.loss_sum;
  }

private:
  std::vector<uint64_t> offsets_;
  std::vector<float> ones_, z_;
};

class criteo_lr_trainer : public trainer {
public:
  explicit criteo_lr_trainer(const trainer_context& ctx)
    : data_(ctr_training_batches(ctx)) {}

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
  explicit criteo_lr_evaluation(std::shared_ptr<const dataset> test)
    : test_(std::move(test)), split_(criteo_test_split(test_)) {}

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
  explicit criteo_lr_plugin(row_optimizer_kind kind) : kind_(kind) {}

  model_spec spec() const override { return criteo_lr_model(kind_); }
  std::unique_ptr<trainer> make_trainer(const trainer_context& ctx) const override {
    return std::make_unique<criteo_lr_trainer>(ctx);
  }
  std::unique_ptr<evaluation> make_evaluation(std::shared_ptr<const dataset> test) const override {
    return std::make_unique<criteo_lr_evaluation>(std::move(test));
  }

private:
  row_optimizer_kind kind_;
};

} // namespace

model_spec criteo_lr_model(row_optimizer_kind kind) {
  model_spec model;
  model.name = "lr:" + std::string(to_string(kind));
  model.tensors.push_back({"dense/kernel", {uint32_t(dense_in)}, tensor_init::zeros, 0});
  model.tensors.push_back({"bias", {1}, tensor_init::zeros, 0});
  sparse_table_config wide;
  wide.dim = 1;
  wide.init = row_init::zeros;
  wide.optimizer = sparse_lr_optimizer(kind);
  model.sparse_tables.push_back({"wide", wide});
  return model;
}

std::unique_ptr<model_plugin> make_criteo_lr_plugin(const std::string& args) {
  if (args.empty() || args == "ftrl")
    return std::make_unique<criteo_lr_plugin>(row_optimizer_kind::ftrl);
  if (args == "adagrad") return std::make_unique<criteo_lr_plugin>(row_optimizer_kind::adagrad);
  throw model_error("lr:" + args + ": the wide table's optimizer must be ftrl (the default) or "
                    "adagrad, e.g. lr:adagrad");
}

} // namespace actorps
