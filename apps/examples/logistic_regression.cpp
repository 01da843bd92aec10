// Example (a): a model that is not actorps' MLP — multinomial logistic regression with its own
// gradient code — trained with the runtime owning the loop. Includes only the public header.
//
//   build/example_logistic_regression     exit 0 when the test accuracy reaches 0.9
#include "actors/ps.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

using namespace actorps;

/// logits = x · W + b, softmax cross-entropy. W is [cols, classes], b is [classes].
struct softmax_regression {
  int cols, classes;

  /// Mean loss over n rows; adds d(mean loss)/d(params) into grad when it is not null.
  double loss(const float* p, const float* x, const int32_t* y, int n, float* grad,
              int64_t* correct) const {
    const float* w = p;
    const float* b = p + cols * classes;
    std::vector<double> z(classes);
    double total = 0;
    for (int r = 0; r < n; ++r) {
      const float* xr = x + std::size_t(r) * cols;
      double top = -1e300;
      for (int k = 0; k < classes; ++k) {
        z[k] = b[k];
        for (int j = 0; j < cols; ++j) z[k] += double(xr[j]) * w[j * classes + k];
        top = std::max(top, z[k]);
      }
      double sum = 0;
      for (int k = 0; k < classes; ++k) sum += std::exp(z[k] - top);
      total += std::log(sum) + top - z[y[r]];
      int best = 0;
      for (int k = 1; k < classes; ++k) best = z[k] > z[best] ? k : best;
      if (correct && best == y[r]) ++*correct;
      if (!grad) continue;
      for (int k = 0; k < classes; ++k) {
        double d = (std::exp(z[k] - top) / sum - (k == y[r] ? 1.0 : 0.0)) / n;
        for (int j = 0; j < cols; ++j) grad[j * classes + k] += float(d * xr[j]);
        grad[cols * classes + k] += float(d);
      }
    }
    return total / n;
  }
};

class regression_trainer : public trainer {
public:
  regression_trainer(softmax_regression m, const trainer_context& ctx)
    : m_(m), data_(*ctx.data), x_(std::size_t(ctx.batch) * m.cols), y_(ctx.batch) {}
  step_loss step(int64_t clock, const float* params, float* grad) override {
    data_.fill_batch(clock, x_.data(), y_.data());
    std::fill(grad, grad + (m_.cols + 1) * m_.classes, 0.0f);
    const int n = data_.batch_size();
    return {m_.loss(params, x_.data(), y_.data(), n, grad, nullptr) * n, n};
  }

private:
  softmax_regression m_;
  const batch_source& data_;
  std::vector<float> x_;
  std::vector<int32_t> y_;
};

class regression_evaluation : public evaluation {
public:
  regression_evaluation(softmax_regression m, std::shared_ptr<const dataset> test)
    : m_(m), test_(std::move(test)) {}
  eval_metrics evaluate(const float* params) override {
    int64_t correct = 0;
    double loss = m_.loss(params, test_->x.data(), test_->y.data(), test_->rows, nullptr, &correct);
    return {double(correct) / test_->rows, loss, test_->rows};
  }

private:
  softmax_regression m_;
  std::shared_ptr<const dataset> test_;
};

/// "softmax:COLS-CLASSES"
class regression_plugin : public model_plugin {
public:
  explicit regression_plugin(const std::string& args) {
    if (std::sscanf(args.c_str(), "%d-%d", &m_.cols, &m_.classes) != 2 || m_.cols < 1
        || m_.classes < 2)
      throw model_error("softmax:" + args + ": expected softmax:COLS-CLASSES");
  }
  model_spec spec() const override {
    auto c = uint32_t(m_.cols), k = uint32_t(m_.classes);
    return {"softmax:" + std::to_string(c) + "-" + std::to_string(k),
            {{"softmax/weights", {c, k}, tensor_init::zeros, 0},
             {"softmax/bias", {k}, tensor_init::zeros, 0}}};
  }
  std::string check_data(int cols, int classes) const override {
    return cols == m_.cols && classes <= m_.classes ? "" : "the data does not fit";
  }
  std::unique_ptr<trainer> make_trainer(const trainer_context& ctx) const override {
    return std::make_unique<regression_trainer>(m_, ctx);
  }
  std::unique_ptr<evaluation> make_evaluation(std::shared_ptr<const dataset> t) const override {
    return std::make_unique<regression_evaluation>(m_, std::move(t));
  }

private:
  softmax_regression m_{};
};

} // namespace

int main() {
  actorps::register_model("softmax", [](const std::string& args) {
    return std::make_unique<regression_plugin>(args);
  });
  actorps::train_options opts;
  opts.model = "softmax:64-10";
  opts.train = std::make_shared<dataset>(make_synthetic(8192, 64, 3, true));
  opts.test = std::make_shared<dataset>(make_synthetic(2048, 64, 3, false));
  opts.optimizer = optimizer_config{};
  opts.optimizer->kind = optimizer_kind::sgd;
  opts.optimizer->learning_rate = 0.1f;
  opts.epochs = 2;
  auto summary = actorps::train(opts);
  if (!summary) {
    std::fprintf(stderr, "training failed: %s\n", describe(summary.error()).c_str());
    return 1;
  }
  std::printf("softmax regression on %d workers: test accuracy %.4f, loss %.4f, %lld samples\n",
              summary->workers, summary->final_test_accuracy, summary->final_test_loss,
              static_cast<long long>(summary->samples));
  return summary->final_test_accuracy >= 0.9 ? 0 : 1;
}
