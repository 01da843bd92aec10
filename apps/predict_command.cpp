#include "apps/predict_command.hpp"

#include "actors/chief/metrics.hpp"
#include "apps/command_line.hpp"
#include "apps/value_bound_flags.hpp"
#include "actors/data/criteo_reader.hpp"
#include "actors/data/schema_reader.hpp"
#include "actors/serving/ctr_scoring.hpp"
#include "actors/serving/model_evaluation.hpp"
#include "actors/serving/prediction_input.hpp"
#include "actors/serving/served_model.hpp"
#include "kernels/backend_factory.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <memory>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace po = boost::program_options;

namespace actorps {

namespace {

struct predict_flags {
  std::string model, input, format = "auto", backend = "cpu";
  int top = 0;
  float max_parameter = default_max_parameter;
};

const char* predict_intro = R"(usage: actorps predict --model DIR/<version> --input FILE [--top K]

Scores every row of FILE with the exported model in DIR/<version> (from --export-dir) and
prints one JSON object per row, in file order.

A classifier (MLP) classifies images:
  {"index":0,"class":9,"probabilities":[p0,p1,...,p9]}
With --top K, the K most probable classes instead, best first (ties: lower class first):
  {"index":0,"class":9,"top":[{"class":9,"probability":0.91},{"class":7,"probability":0.05}]}
FILE is an IDX image file (Fashion-MNIST's format, gzip-compressed or not; its uint8 pixels
are scaled as in training, / 255) or raw little-endian float32, N x 784 values already scaled
to [0, 1], no header.

A CTR model (lr, dlrm) gives the click probability of each line of a Criteo file (plain or
gzip; label, I1-I13, C1-C26, TAB-separated, the label read but not used; a value the model
never saw gets the unknown row, zeros):
  {"index":0,"probability":0.2371}

)";

constexpr std::size_t ctr_chunk = 4096;  // lines scored at a time: memory stays bounded

po::options_description predict_options(predict_flags& f) {
  po::options_description desc("actorps predict flags");
  desc.add_options()
    ("help,h", "print this help")
    ("model", po::value(&f.model), "the export version directory, DIR/<version>")
    ("input", po::value(&f.input), "the images: an IDX file (.gz or not) or raw float32")
    ("top", po::value(&f.top)->default_value(f.top),
     "print the K most probable classes with their probabilities (0: every probability)")
    ("format", po::value(&f.format)->default_value(f.format),
     "auto | idx | raw: how to read --input (auto: IDX when the file starts like one)")
    ("backend", po::value(&f.backend)->default_value(f.backend),
     "cpu | cuda | auto: where the forward pass runs")
    ("max-parameter", po::value(&f.max_parameter)->default_value(f.max_parameter),
     max_parameter_help);
  return desc;
}

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

int predict_images(const predict_flags& f, const exported_model& model, backend& be) {
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
int predict_clicks(const predict_flags& f, const ctr_model& model, backend& be) {
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

int predict_command(const std::vector<std::string>& args) {
  predict_flags f;
  return run_command_line("predict", args, predict_options(f), predict_intro, [&] {
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
  });
}

} // namespace actorps
