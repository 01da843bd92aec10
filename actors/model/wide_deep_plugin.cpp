#include "actors/model/wide_deep_plugin.hpp"

#include "actors/model/criteo_model.hpp"
#include "actors/ps/model_registry.hpp"

#include <cmath>
#include <vector>

namespace actorps {

namespace {

constexpr int eval_chunk = 4096;  // samples per forward pass of the evaluation

const char* model_name(bool fm) { return fm ? "deepfm" : "wdl"; }

ctr_layout layout_of(const wide_deep_shape& shape) { return {shape.dense_in, shape.fields}; }

/// table_rows::inverse as the kernels' int32 index (a batch's distinct rows are far below 2^31).
ctr_rows rows_of(const table_rows& t) {
  return {t.values.data(), static_cast<int>(t.keys.size()),
          reinterpret_cast<const int32_t*>(t.inverse.data())};
}

/// Throws std::logic_error unless the runtime handed the two tables of the spec, "embeddings"
/// (dim) and "wide" (1), each with `uses` keys named (and gradients when `grads`).
void check_tables(const char* model, const std::vector<table_rows>& tables, uint32_t dim,
                  std::size_t uses, bool grads) {
  const std::string who(model);
  if (tables.size() != 2)
    throw std::logic_error(who + ": expected 2 tables, got " + std::to_string(tables.size()));
  const uint32_t dims[2] = {dim, 1};
  for (std::size_t k = 0; k < 2; ++k) {
    const auto& t = tables[k];
    if (t.dim != dims[k] || t.inverse.size() != uses || t.values.size() != t.keys.size() * t.dim
        || (grads && t.grads.size() != t.keys.size() * t.dim))
      throw std::logic_error(who + ": table " + std::to_string(k) + "'s rows do not match the "
                             + "keys asked for (dim " + std::to_string(t.dim) + ", "
                             + std::to_string(t.inverse.size()) + " uses, "
                             + std::to_string(uses) + " asked)");
  }
}

/// trainer::keys and evaluation::keys: every key of `b`, sample by sample, field by field, for
/// both tables.
void name_keys(const char* model, const criteo_batch& b,
               std::vector<std::vector<uint64_t>>& per_table) {
  if (per_table.size() != 2)
    throw std::logic_error(std::string(model) + ": keys() for " + std::to_string(per_table.size())
                           + " tables, the model has 2");
  for (auto& keys : per_table) keys.assign(b.keys.begin(), b.keys.end());
}

class wide_deep_trainer : public trainer {
public:
  wide_deep_trainer(const wide_deep_shape& shape, const trainer_context& ctx)
    : data_(ctr_training_batches(ctx, layout_of(shape))),
      be_(ctr_backend(ctx)), model_(*be_, shape, ctx.batch) {}

  void keys(int64_t clock, std::vector<std::vector<uint64_t>>& per_table) override {
    name_keys(model_name(model_.shape().fm), data_.at(clock), per_table);
  }

  step_loss step(int64_t clock, const float* params, float* grad,
                 std::vector<table_rows>& tables) override {
    const auto& b = data_.at(clock);
    const auto& shape = model_.shape();
    check_tables(model_name(shape.fm), tables, uint32_t(shape.dim), b.keys.size(), true);
    model_.set_parameters(params);
    auto stats = model_.train_step(b.dense.data(), b.labels.data(), rows_of(tables[0]),
                                   rows_of(tables[1]), static_cast<int>(b.rows()), grad,
                                   tables[0].grads.data(), tables[1].grads.data(), bags_.of(b),
                                   sample_weights(b));
    return {stats.loss_sum, stats.rows};
  }

  std::string device() const override { return be_->name(); }

private:
  ctr_batches data_;
  std::unique_ptr<backend> be_;
  wide_deep model_;
  batch_bags bags_;
};

class wide_deep_evaluation : public evaluation {
public:
  wide_deep_evaluation(const wide_deep_shape& shape, std::shared_ptr<const dataset> test)
    : test_(std::move(test)), split_(criteo_test_split(test_, layout_of(shape))),
      be_(make_cpu_backend()),
      model_(*be_, shape, eval_chunk) {}

  void keys(std::vector<std::vector<uint64_t>>& per_table) override {
    name_keys(model_name(model_.shape().fm), split_, per_table);
  }

  eval_metrics evaluate(const float* params, const std::vector<table_rows>& tables) override {
    const auto& shape = model_.shape();
    check_tables(model_name(shape.fm), tables, uint32_t(shape.dim), split_.keys.size(), false);
    model_.set_parameters(params);
    z_.resize(split_.rows());
    model_.predict_logits(split_.dense.data(), rows_of(tables[0]), rows_of(tables[1]),
                          static_cast<int>(split_.rows()), z_.data(), bags_.of(split_));
    return binary_metrics_from_logits(z_.data(), split_.labels.data(), split_.rows(),
                                      test_->groups);
  }

private:
  std::shared_ptr<const dataset> test_;
  const criteo_batch& split_;
  std::unique_ptr<backend> be_;
  wide_deep model_;
  std::vector<float> z_;
  batch_bags bags_;
};

class wide_deep_plugin : public criteo_plugin {
public:
  explicit wide_deep_plugin(wide_deep_shape shape)
    : criteo_plugin(layout_of(shape)), shape_(std::move(shape)) {}

  model_spec spec() const override { return wide_deep_model(shape_); }
  std::unique_ptr<trainer> make_trainer(const trainer_context& ctx) const override {
    return std::make_unique<wide_deep_trainer>(shape_, ctx);
  }
  std::unique_ptr<evaluation> make_evaluation(std::shared_ptr<const dataset> test) const override {
    return std::make_unique<wide_deep_evaluation>(shape_, std::move(test));
  }
  /// dlrm's recipe, with the tables' Adagrad at 0.1 (deepfm) or at each table's own rate (wdl:
  /// see wide_deep_model).
  training_defaults defaults() const override {
    auto d = ctr_recipe();
    if (!shape_.fm) d.table_lr = 0.0f;
    return d;
  }

protected:
  std::unique_ptr<model_plugin> with_layout(const ctr_layout& layout) const override {
    auto shape = shape_;
    shape.dense_in = layout.dense;
    shape.fields = layout.fields;
    return std::make_unique<wide_deep_plugin>(std::move(shape));
  }

private:
  wide_deep_shape shape_;
};

std::string hidden_text(const std::vector<int>& widths) {
  std::string out;
  for (int w : widths) out += (out.empty() ? "" : "-") + std::to_string(w);
  return out;
}

std::unique_ptr<model_plugin> make_plugin(const std::string& args, bool fm) {
  wide_deep_shape shape = parse_wide_deep_shape(args, fm);
  try {
    validate_wide_deep_shape(shape);
  } catch (const std::invalid_argument& e) {
    throw model_error(std::string(model_name(fm)) + ":" + args + ": " + e.what());
  }
  return std::make_unique<wide_deep_plugin>(std::move(shape));
}

} // namespace

wide_deep_shape parse_wide_deep_shape(const std::string& text, bool fm) {
  wide_deep_shape shape;  // 13 dense features, 26 fields: Criteo's layout
  shape.fm = fm;
  std::string args = text;
  ctr_layout layout;
  if (take_layout(args, layout)) {
    shape.dense_in = layout.dense;
    shape.fields = layout.fields;
  }
  if (args.empty()) return shape;
  const std::string name = model_name(fm);
  auto bad = [&](const std::string& what) {
    return model_error(name + ":" + text + ": " + what + "; the form is " + name
                       + "[:DIM[:HIDDEN]][:DENSExFIELDS], hidden widths joined by '-', e.g. "
                       + name + ":16:256-128");
  };
  const auto colon = args.find(':');
  const std::string dim = args.substr(0, colon);
  if (dim.empty() || dim.size() > 4 || dim.find_first_not_of("0123456789") != std::string::npos
      || std::stoi(dim) < 1)
    throw bad("DIM '" + dim + "' is not a positive width");
  shape.dim = std::stoi(dim);
  if (colon == std::string::npos) return shape;
  const std::string hidden = args.substr(colon + 1);
  if (hidden.find(':') != std::string::npos) throw bad("more than two parts");
  shape.hidden.clear();
  if (hidden.empty()) return shape;
  auto widths = parse_layers("1-" + hidden);  // parse_layers wants two widths at least
  if (!widths) throw bad("HIDDEN '" + hidden + "' is not widths like 256-128");
  shape.hidden.assign(widths->begin() + 1, widths->end());
  return shape;
}

std::string wide_deep_name(const wide_deep_shape& shape) {
  return std::string(model_name(shape.fm)) + ":" + std::to_string(shape.dim) + ":"
         + hidden_text(shape.hidden) + layout_suffix(layout_of(shape));
}

// The tables' settings are dlrm's (dlrm_plugin.cpp): embedding rows uniform in ±0.05, Adagrad
// whose accumulator starts at 1e-4. The wide weights start at zero, as lr's do, with Adagrad's
// accumulator at 1e-6 (sparse_lr_optimizer's). Rates, on 500 000 generated lines (best AUC
// 0.8032, one epoch, the recipe above): deepfm's embeddings at 0.1 reached 0.7741 (0.03: 0.7674,
// 0.3: 0.7527, 1.0: 0.6795); wdl's, which learn only through the deep MLP's small weights, at
// 0.1 reached 0.7568, 0.3: 0.7669, 1.0: 0.7795, 3.0: 0.7793 (its wide weights at 0.1 each time;
// all of wdl's tables at 1.0: 0.7498). So wdl keeps a rate per table, deepfm one for both.
model_spec wide_deep_model(const wide_deep_shape& shape) {
  validate_wide_deep_shape(shape);
  model_spec model;
  model.name = wide_deep_name(shape);
  for (const auto& [name, dims] : wide_deep_tensors(shape)) {
    std::vector<uint32_t> shape_u(dims.begin(), dims.end());
    if (name == "linear/kernel")
      model.tensors.push_back({name, shape_u, tensor_init::zeros, 0});
    else if (dims.size() == 2)  // He-uniform, as the MLP's kernels
      model.tensors.push_back({name, shape_u, tensor_init::uniform,
                               std::sqrt(6.0 / static_cast<double>(dims[0]))});
    else
      model.tensors.push_back({name, shape_u, tensor_init::zeros, 0});
  }
  sparse_table_config embeddings;
  embeddings.dim = static_cast<uint32_t>(shape.dim);
  embeddings.init = row_init::uniform;
  embeddings.scale = 0.05f;
  embeddings.optimizer.kind = row_optimizer_kind::adagrad;
  embeddings.optimizer.learning_rate = shape.fm ? 0.1f : 1.0f;
  embeddings.optimizer.initial_accumulator = 1e-4f;
  model.sparse_tables.push_back({"embeddings", embeddings});
  sparse_table_config wide;
  wide.dim = 1;
  wide.init = row_init::zeros;
  wide.optimizer.kind = row_optimizer_kind::adagrad;
  wide.optimizer.learning_rate = 0.1f;
  wide.optimizer.initial_accumulator = 1e-6f;
  model.sparse_tables.push_back({"wide", wide});
  return model;
}

std::unique_ptr<model_plugin> make_wdl_plugin(const std::string& args) {
  return make_plugin(args, false);
}

std::unique_ptr<model_plugin> make_deepfm_plugin(const std::string& args) {
  return make_plugin(args, true);
}

} // namespace actorps
