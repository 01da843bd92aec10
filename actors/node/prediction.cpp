#include "actors/ps/prediction.hpp"

#include "actors/ps/json.hpp"
#include "actors/data/criteo_reader.hpp"
#include "actors/data/schema_reader.hpp"
#include "actors/serving/ctr_scoring.hpp"
#include "actors/serving/model_evaluation.hpp"
#include "actors/serving/prediction_input.hpp"
#include "actors/serving/served_model.hpp"
#include "kernels/backend_factory.hpp"
#include "kernels/value_bounds.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <stdexcept>

namespace actorps {

namespace {

constexpr std::size_t ctr_chunk = 4096;  // lines scored at a time: memory stays bounded

/// One output line: every probability, or the `top` best classes. A probability is written as
/// the double equal to the float (it reads back as the same float).
std::string prediction_line(int index, const float* p, int classes, int top) {
  nlohmann::ordered_json line{{"index", index}, {"class", predicted_class(p, classes)}};
  if (top == 0) {
    auto& list = line["probabilities"] = nlohmann::ordered_json::array();
    for (int c = 0; c < classes; ++c) list.push_back(double(p[c]));
  } else {
    std::vector<int> order(classes);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
    auto& list = line["top"] = nlohmann::ordered_json::array();
    for (int k = 0; k < top; ++k)
      list.push_back({{"class", order[k]}, {"probability", double(p[order[k]])}});
  }
  return render_json(line);
}

/// Writes one line and its newline to stdout.
void print_line(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
}

int predict_images(const prediction_options& f, const exported_model& model, backend& be) {
  auto format = parse_input_format(f.format);
  if (!format)
    throw std::invalid_argument("--format must be auto, idx or raw (got " + f.format + ")");
  const int classes = model.layers.back();
  if (f.top < 0 || f.top > classes)
    throw std::invalid_argument("--top must be between 0 and the model's "
                                + std::to_string(classes) + " classes (got "
                                + std::to_string(f.top) + ")");
  const auto images = read_prediction_input(f.input, model.layers.front(), model.input_divisor,
                                            *format);
  const auto probs = predict_probabilities(be, model, images.x.data(), images.rows);
  for (int i = 0; i < images.rows; ++i)
    print_line(prediction_line(i, probs.data() + static_cast<std::size_t>(i) * classes, classes,
                               f.top));
  return std::fflush(stdout) == 0 ? 0 : 1;
}

/// Streams the Criteo lines of f.input through the model, a chunk at a time. A file of another
/// layout stops at its first line with the reader's error (which line, which field).
int predict_clicks(const prediction_options& f, const ctr_model& model, backend& be) {
  if (f.top != 0 || f.format != "auto")
    throw std::invalid_argument("--top and --format are for classifiers; " + model.name
                                + (model.shaped() ? " reads its schema's lines"
                                                  : " reads Criteo lines"));
  criteo_batch batch;
  int64_t index = 0;
  auto score = [&] {
    for (float p : ctr_probabilities(ctr_logits(be, model, batch)))
      print_line(render_json({{"index", index++}, {"probability", double(p)}}));
  };
  try {
    if (model.shaped()) {  // the lines of the log it trained on, as its recorded schema reads them
      schema_reader reader(f.input, 0, 1, model.input, {model.delimiter});
      while (reader.next_batch(ctr_chunk, batch) > 0) score();
    } else {
      criteo_reader reader(f.input);
      while (reader.next_batch(ctr_chunk, batch) > 0) score();
    }
  } catch (const dataset_error& e) {
    std::fflush(stdout);
    throw std::invalid_argument(
      std::string("--input is not in the model's input layout (")
      + (model.shaped() ? "the columns of the schema the model records"
                        : "Criteo lines: label, I1-I13, C1-C26, TAB-separated")
      + "): " + e.what());
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}

} // namespace

int print_predictions(const prediction_options& f) {
  if (f.model.empty()) throw std::invalid_argument("--model DIR/<version> is required");
  if (f.input.empty()) throw std::invalid_argument("--input FILE is required");
  auto kind = parse_backend_kind(f.backend);
  if (!kind)
    throw std::invalid_argument("--backend must be cpu, cuda or auto (got " + f.backend + ")");
  if (auto why = invalid_bound(f.max_parameter); !why.empty())
    throw std::invalid_argument("--max-parameter " + why);
  const auto model = load_served_model(f.model, f.max_parameter);
  std::string why;
  auto be = make_backend(*kind, 0, &why);
  if (!be) throw std::invalid_argument("--backend cuda needs a usable CUDA device: " + why);
  if (const auto* ctr = std::get_if<ctr_model>(&model)) return predict_clicks(f, *ctr, *be);
  return predict_images(f, std::get<exported_model>(model), *be);
}

} // namespace actorps
