#include "actors/serving/model_evaluation.hpp"

#include "kernels/mlp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace actorps {

namespace {

constexpr int chunk_rows = 1000;  // rows per forward pass, as the evaluator

} // namespace

std::vector<float> predict_probabilities(backend& be, const exported_model& model, const float* x,
                                         int rows) {
  mlp net(be, model.layers, chunk_rows);
  net.set_parameters(model.parameters.data());
  std::vector<float> probs(static_cast<std::size_t>(rows) * model.layers.back());
  net.predict(x, rows, probs.data());
  return probs;
}

int predicted_class(const float* probabilities, int classes) {
  int best = 0;
  for (int c = 1; c < classes; ++c)
    if (probabilities[c] > probabilities[best]) best = c;
  return best;
}

model_metrics evaluate_model(const exported_model& model, const dataset& split) {
  const int classes = model.layers.back();
  if (split.cols != model.layers.front())
    throw std::invalid_argument("the data has " + std::to_string(split.cols)
                                + " features per row, the model takes "
                                + std::to_string(model.layers.front()));
  if (split.classes > classes)
    throw std::invalid_argument("the data has " + std::to_string(split.classes)
                                + " classes, the model predicts " + std::to_string(classes));
  auto be = make_cpu_backend();
  const auto probs = predict_probabilities(*be, model, split.x.data(), split.rows);
  model_metrics m;
  m.rows = split.rows;
  m.classes = classes;
  m.confusion.assign(static_cast<std::size_t>(classes) * classes, 0);
  double loss_sum = 0;
  for (int r = 0; r < split.rows; ++r) {
    const float* p = probs.data() + static_cast<std::size_t>(r) * classes;
    const int label = split.y[r];
    const int predicted = predicted_class(p, classes);
    ++m.confusion[static_cast<std::size_t>(label) * classes + predicted];
    m.correct += predicted == label ? 1 : 0;
    const float floored = std::max(p[label], std::numeric_limits<float>::min());
    loss_sum -= std::log(static_cast<double>(floored));
  }
  m.accuracy = m.rows > 0 ? double(m.correct) / double(m.rows) : 0.0;
  m.loss = m.rows > 0 ? loss_sum / double(m.rows) : 0.0;
  return m;
}

} // namespace actorps
