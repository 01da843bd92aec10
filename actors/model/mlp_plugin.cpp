#include "actors/model/mlp_plugin.hpp"

#include "actors/ps/model_registry.hpp"
#include "kernels/backend_factory.hpp"
#include "kernels/mlp.hpp"

#include <cmath>

namespace actorps {

namespace {

constexpr int eval_chunk = 1000;  // rows per forward pass of the evaluation

class mlp_trainer : public trainer {
public:
  mlp_trainer(const std::vector<int>& layers, const trainer_context& ctx)
    : data_(*ctx.data), batch_(ctx.batch) {
    std::string why;
    be_ = make_backend(ctx.backend, ctx.device, &why);
    if (!be_ || (ctx.backend == backend_kind::cuda && be_->name() != "cuda"))
      throw std::runtime_error(why.empty() ? "no backend" : why);
    model_ = std::make_unique<mlp>(*be_, layers, batch_);
    x_ = host_buffer<float>(*be_, std::size_t(batch_) * layers.front());
    y_ = host_buffer<int32_t>(*be_, batch_);
  }

  step_loss step(int64_t clock, const float* params, float* grad) override {
    model_->set_parameters(params);
    data_.fill_batch(clock, x_.get(), y_.get());
    auto stats = model_->train_step(x_.get(), y_.get(), batch_, grad);
    return {stats.loss_sum, stats.rows};
  }

  std::string device() const override { return be_->name(); }

private:
  const batch_source& data_;
  int batch_;
  std::unique_ptr<backend> be_;
  std::unique_ptr<mlp> model_;
  host_buffer<float> x_;
  host_buffer<int32_t> y_;
};

class mlp_evaluation : public evaluation {
public:
  mlp_evaluation(const std::vector<int>& layers, std::shared_ptr<const dataset> test)
    : test_(std::move(test)), be_(make_cpu_backend()),
      model_(std::make_unique<mlp>(*be_, layers, eval_chunk)) {}

  eval_metrics evaluate(const float* params) override {
    model_->set_parameters(params);
    auto stats = model_->evaluate(test_->x.data(), test_->y.data(), test_->rows);
    eval_metrics out;
    out.rows = stats.rows;
    out.accuracy = stats.rows ? double(stats.correct) / double(stats.rows) : 0;
    out.loss = stats.rows ? stats.loss_sum / double(stats.rows) : 0;
    return out;
  }

private:
  std::shared_ptr<const dataset> test_;
  std::unique_ptr<backend> be_;
  std::unique_ptr<mlp> model_;
};

class mlp_plugin : public model_plugin {
public:
  explicit mlp_plugin(std::vector<int> layers) : layers_(std::move(layers)) {}

  model_spec spec() const override { return mlp_model(layers_); }

  std::string check_data(int cols, int classes) const override {
    if (cols != layers_.front())
      return "the model takes " + std::to_string(layers_.front()) + " inputs but the data has "
             + std::to_string(cols) + " features";
    if (classes > layers_.back())
      return "the model has " + std::to_string(layers_.back()) + " outputs but the data has "
             + std::to_string(classes) + " classes";
    return "";
  }

  std::unique_ptr<trainer> make_trainer(const trainer_context& ctx) const override {
    return std::make_unique<mlp_trainer>(layers_, ctx);
  }

  std::unique_ptr<evaluation> make_evaluation(std::shared_ptr<const dataset> test) const override {
    return std::make_unique<mlp_evaluation>(layers_, std::move(test));
  }

private:
  std::vector<int> layers_;
};

} // namespace

model_spec mlp_model(const std::vector<int>& layers) {
  model_spec model;
  model.name = "mlp:" + to_string(layers);
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    auto in = static_cast<uint32_t>(layers[l]), out = static_cast<uint32_t>(layers[l + 1]);
    auto prefix = "dense" + std::to_string(l);
    // He-uniform, as kernels/parameter_init.cpp: the same stream gives the same bits.
    model.tensors.push_back({prefix + "/kernel", {in, out}, tensor_init::uniform,
                             std::sqrt(6.0 / static_cast<double>(in))});
    model.tensors.push_back({prefix + "/bias", {out}, tensor_init::zeros, 0});
  }
  return model;
}

std::optional<std::vector<int>> mlp_layers(const model_spec& model) {
  if (model.name.rfind("mlp:", 0) != 0) return std::nullopt;
  return parse_layers(model.name.substr(4));
}

std::unique_ptr<model_plugin> make_mlp_plugin(const std::string& args) {
  auto layers = parse_layers(args);
  if (!layers)
    throw model_error("mlp:" + args + ": the widths must be at least two positive integers "
                      "joined by '-', e.g. mlp:784-256-128-10");
  return std::make_unique<mlp_plugin>(std::move(*layers));
}

} // namespace actorps
