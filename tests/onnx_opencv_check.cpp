// An independent check of model.onnx: OpenCV's DNN module (its own ONNX importer and kernels)
// loads an exported model and must agree with `actorps predict` on 1,000 test images — the
// same class for every image and every probability within 1e-4.
//
// It trains a short model first: on the real Fashion-MNIST when Debian's dataset-fashion-mnist
// is installed (scripts/setup.sh installs it), feeding `actorps predict` the first 1,000 t10k
// images as an IDX file; otherwise on the synthetic dataset, saying so. A program of its own,
// so that OpenCV stays out of `actorps` and `actorps_tests`.
// Exit status: 0 when they agree, 1 otherwise (naming the first differences).
#include "actors/ps/data_source.hpp"
#include "actors/data/load_split.hpp"

#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <nlohmann/json.hpp>
#include <opencv2/dnn.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using actorps::dataset;

constexpr int images = 1000;
constexpr int classes = 10;
constexpr double probability_tolerance = 1e-4;

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "onnx_opencv_check: FAILED: %s\n", why.c_str());
  std::exit(1);
}

bool have_fashion_mnist() {
  const std::string dir = actorps::default_fashion_mnist_dir;
  return std::filesystem::exists(dir + "/t10k-images-idx3-ubyte.gz")
         && std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz");
}

/// Trains a short model with --export-dir; returns the export's version directory.
std::string train_and_export(const std::string& scratch, bool real) {
  const std::string data = real ? "--steps 150"
                                : "--dataset synthetic --steps 60 --synthetic-test-rows 1000";
  const auto run = actorps::test::run_actorps("simulate " + data + " --eval-every 0 "
                                              "--no-progress --export-dir " + scratch + "/export");
  if (run.status != 0) fail("the training run failed:\n" + run.output);
  const std::string model = scratch + "/export/1";
  std::ifstream meta_file(model + "/metadata.json");
  const double accuracy = nlohmann::json::parse(meta_file)["test_accuracy"];
  std::printf("  exported %s: test accuracy %.4f\n", model.c_str(), accuracy);
  if (!(accuracy > 0.6))
    fail("the model did not train (test accuracy " + std::to_string(accuracy) + ")");
  return model;
}

/// The first `images` rows of the test split in a file for `actorps predict`: an IDX image
/// file for Fashion-MNIST (uint8 pixels = the loader's x · 255, exactly), raw float32 else.
std::string write_input(const std::string& scratch, const dataset& test, bool real) {
  std::string bytes;
  if (real) {
    for (uint32_t v : {0x803u, static_cast<uint32_t>(images), 28u, 28u})
      for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(v >> shift));
    for (std::size_t i = 0; i < std::size_t{images} * test.cols; ++i)
      bytes.push_back(static_cast<char>(std::lround(test.x[i] * actorps::pixel_divisor)));
  } else {
    bytes.assign(reinterpret_cast<const char*>(test.x.data()),
                 std::size_t{images} * test.cols * sizeof(float));
  }
  const std::string path = scratch + (real ? "/images.idx" : "/images.f32");
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

/// `actorps predict`'s lines for the input file.
std::vector<nlohmann::json> predict_with_actorps(const std::string& model,
                                                 const std::string& input) {
  const auto run = actorps::test::run_actorps("predict --model " + model + " --input " + input);
  if (run.status != 0) fail("actorps predict failed:\n" + run.output.substr(0, 4000));
  std::vector<nlohmann::json> lines;
  std::istringstream out(run.output);
  for (std::string line; std::getline(out, line);) lines.push_back(nlohmann::json::parse(line));
  if (lines.size() != static_cast<std::size_t>(images))
    fail("actorps predict printed " + std::to_string(lines.size()) + " lines, expected "
         + std::to_string(images));
  return lines;
}

/// OpenCV's probabilities for the first `images` rows (images × classes).
cv::Mat predict_with_opencv(const std::string& model, const dataset& test) {
  cv::dnn::Net net = cv::dnn::readNetFromONNX(model + "/model.onnx");
  net.setInput(cv::Mat(images, test.cols, CV_32F, const_cast<float*>(test.x.data())), "input");
  cv::Mat probs = net.forward("probabilities");
  if (probs.rows != images || probs.cols != classes || probs.type() != CV_32F)
    fail("OpenCV's output is " + std::to_string(probs.rows) + "x" + std::to_string(probs.cols)
         + ", expected " + std::to_string(images) + "x" + std::to_string(classes) + " float");
  return probs;
}

} // namespace

int main() {
  actorps::test::scratch_dir scratch("actorps_onnx_opencv");
  const bool real = have_fashion_mnist();
  std::printf("onnx_opencv_check: %s\n",
              real ? "Fashion-MNIST (t10k, first 1000 images)"
                   : "Fashion-MNIST is not installed: the synthetic dataset instead");
  const std::string model = train_and_export(scratch.path, real);
  actorps::data_source src;
  if (!real) {
    src.what = actorps::data_source::kind::synthetic;
    src.test_rows = images;
  }
  const auto test = actorps::load_split(src, false);
  const auto lines = predict_with_actorps(model, write_input(scratch.path, *test, real));
  const cv::Mat probs = predict_with_opencv(model, *test);

  int class_mismatches = 0, correct = 0;
  double max_diff = 0;
  for (int i = 0; i < images; ++i) {
    const float* p = probs.ptr<float>(i);
    const int ours = lines[i]["class"];
    int theirs = 0;
    for (int c = 1; c < classes; ++c)
      if (p[c] > p[theirs]) theirs = c;
    if (theirs != ours && ++class_mismatches <= 5)
      std::printf("  image %d: OpenCV class %d, actorps class %d\n", i, theirs, ours);
    correct += theirs == test->y[i] ? 1 : 0;
    for (int c = 0; c < classes; ++c) {
      const double diff = std::fabs(p[c] - lines[i]["probabilities"][c].get<double>());
      max_diff = std::max(max_diff, diff);
    }
  }
  std::printf("  OpenCV %s vs actorps predict on %d images: %d class mismatches, max probability "
              "difference %.3g (tolerance %.0e); OpenCV's accuracy on them %.4f\n",
              CV_VERSION, images, class_mismatches, max_diff, probability_tolerance,
              double(correct) / images);
  if (class_mismatches > 0)
    fail(std::to_string(class_mismatches) + " images classified differently");
  if (!(max_diff <= probability_tolerance))
    fail("probabilities differ by up to " + std::to_string(max_diff));
  std::printf("onnx_opencv_check: passed\n");
  return 0;
}
