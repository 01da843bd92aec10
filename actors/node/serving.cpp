// export_model and consolidate_export (actors/ps/serving.hpp): the serving layer behind the
// front door.
#include "actors/ps/serving.hpp"

#include "actors/data/load_split.hpp"
#include "actors/data/schema_reader.hpp"
#include "actors/serving/ctr_scoring.hpp"
#include "actors/serving/export_chain.hpp"
#include "actors/serving/model_evaluation.hpp"
#include "actors/serving/program_model.hpp"
#include "actors/serving/served_model.hpp"
#include "actors/serving/versioned_dir.hpp"
#include "kernels/backend_factory.hpp"

#include <filesystem>
#include <stdexcept>
#include <variant>

namespace actorps {

struct export_model::impl {
  served_model model;
};

namespace {

export_scores scores_of(model_metrics m) {
  export_scores out;
  out.rows = m.rows;
  out.correct = m.correct;
  out.accuracy = m.accuracy;
  out.loss = m.loss;
  out.auc = m.auc;
  out.classes = m.classes;
  out.confusion = std::move(m.confusion);
  return out;
}

} // namespace

export_model::export_model(const std::string& path, float max_parameter)
    : impl_(std::make_shared<impl>(impl{load_served_model(path, max_parameter)})) {}

bool export_model::ctr() const { return std::holds_alternative<ctr_model>(impl_->model); }

std::string export_model::name() const {
  const auto* ctr = std::get_if<ctr_model>(&impl_->model);
  return ctr ? ctr->name : std::string();
}

std::size_t export_model::parameters() const {
  const auto* mlp = std::get_if<exported_model>(&impl_->model);
  return mlp ? mlp->parameters.size() : 0;
}

int export_model::input_width() const {
  const auto* mlp = std::get_if<exported_model>(&impl_->model);
  return mlp ? mlp->layers.front() : 0;
}

export_scores export_model::evaluate(const data_source& test) const {
  const auto* ctr = std::get_if<ctr_model>(&impl_->model);
  if (ctr && ctr->shaped()) {  // the test file's lines as the model's recorded schema reads them
    schema_reader reader(test.test_path, 0, 1, ctr->input, {ctr->delimiter});
    criteo_batch split, batch;
    while (reader.next_batch(1 << 16, batch) > 0) split.append(batch);
    return scores_of(evaluate_ctr_model(*ctr, split));
  }
  const auto split = load_split(test, false);
  if (ctr) return scores_of(evaluate_ctr_model(*ctr, split->criteo));
  return scores_of(evaluate_model(std::get<exported_model>(impl_->model), *split));
}

std::vector<float> export_model::predict(const float* x, std::size_t rows) const {
  const auto* mlp = std::get_if<exported_model>(&impl_->model);
  if (!mlp) throw std::invalid_argument("predict: " + name() + " is a CTR model, not an MLP");
  auto be = make_backend(backend_kind::cpu);
  return predict_probabilities(*be, *mlp, x, static_cast<int>(rows));
}

program_export read_program_export(const std::string& path) {
  std::error_code ec;
  std::string version = path;
  if (!std::filesystem::exists(path + "/" + model_capnp_name, ec) && latest_version(path) > 0)
    version = path + "/" + std::to_string(latest_version(path));
  auto model = read_program_version(version);
  program_export out;
  out.name = std::move(model.name);
  for (auto& t : model.tensors)
    out.tensors.push_back({std::move(t.name), std::move(t.shape), std::move(t.values)});
  for (auto& t : model.tables)
    out.tables.push_back({std::move(t.name), t.dim, std::move(t.keys), std::move(t.values)});
  return out;
}

std::string consolidate_export(const std::string& path, const std::string& out) {
  return consolidate_chain(path, out).path;
}

} // namespace actorps
