// An independent check of a CTR model's model.onnx and vocabulary files: OpenCV's DNN module
// (its own ONNX importer and kernels) must give `actorps predict`'s click probabilities, within
// 1e-5, for every line of a test file — for an lr and a dlrm export.
//
// It generates a small Criteo-format set (actorps gen-data criteo), trains each model briefly
// with --export-dir, and feeds OpenCV the test lines as model.onnx's inputs: "dense" from the
// Criteo reader, "indices" looked up in vocab/C<f>.tsv by this program (a key not there: 0).
//
// OpenCV 4.6's importer takes a Gather only with one constant index, so it cannot run the
// embedding lookups (Gather of a field matrix at runtime indices). Before loading, this program
// rewrites exactly those nodes into the same product written with ops it runs:
// onehot = Relu(1 − |idx·1ᵀ − (0, 1, …, V−1)|) (1 where the row is idx, else 0, exact for
// integer idx), then onehot · matrix, which picks that row exactly. Every other node — the
// per-field index Gathers, the MLPs, the interaction (Gram MatMul, Slices, Concat), the Sum,
// the Sigmoid — and every initializer is model.onnx's own.
// Exit status: 0 when they agree, 1 otherwise (naming the first differences).
#include "actors/data/criteo_reader.hpp"

#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>
#include <opencv2/dnn.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using actorps::criteo_batch;

constexpr double probability_tolerance = 1e-5;
constexpr int chunk_rows = 250;  // rows per OpenCV forward pass: the one-hot matrices stay small

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "onnx_ctr_opencv_check: FAILED: %s\n", why.c_str());
  std::exit(1);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

/// Trains `model` briefly on the generated set with --export-dir; returns the version directory.
std::string train_and_export(const std::string& scratch, const std::string& model, int epochs) {
  const std::string out = scratch + "/export-" + model.substr(0, model.find(':'));
  const auto run = actorps::test::run_actorps(
    "simulate --no-progress --model " + model + " --dataset criteo:" + scratch + "/train.tsv --test "
    + scratch + "/test.tsv --epochs " + std::to_string(epochs) + " --batch 256 --optimizer adam "
    "--lr 0.002 --export-dir " + out);
  if (run.status != 0) fail("training " + model + " failed:\n" + run.output);
  const auto meta = nlohmann::json::parse(read_text(out + "/1/metadata.json"));
  std::printf("  exported %s/1 (%s): test AUC %.4f, logloss %.4f\n", out.c_str(), model.c_str(),
              meta["test_auc"].get<double>(), meta["test_logloss"].get<double>());
  if (!(meta["test_auc"].get<double>() > 0.6)) fail(model + " did not train");
  return out + "/1";
}

/// `actorps predict`'s probability for each line of `input`.
std::vector<double> predict_with_actorps(const std::string& model, const std::string& input) {
  const auto run = actorps::test::run_actorps("predict --model " + model + " --input " + input);
  if (run.status != 0) fail("actorps predict failed:\n" + run.output.substr(0, 4000));
  std::vector<double> p;
  std::istringstream out(run.output);
  for (std::string line; std::getline(out, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["index"].get<std::size_t>() != p.size()) fail("predict's lines are out of order");
    p.push_back(j["probability"].get<double>());
  }
  return p;
}

/// vocab/C<f>.tsv as key → row, read here (not through actorps' export code).
std::unordered_map<uint64_t, int64_t> read_vocab(const std::string& model, int field) {
  std::istringstream in(read_text(model + "/vocab/C" + std::to_string(field + 1) + ".tsv"));
  std::string line;
  if (!std::getline(in, line) || line != "key\trow") fail("vocab file without its header");
  std::unordered_map<uint64_t, int64_t> rows;
  while (std::getline(in, line)) {
    const auto tab = line.find('\t');
    rows.emplace(std::stoull(line.substr(0, tab)), std::stoll(line.substr(tab + 1)));
  }
  return rows;
}

/// A new node of `op` with one output.
onnx::NodeProto* add(onnx::GraphProto* g, const char* op, std::vector<std::string> in,
                     const std::string& out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out);
  for (auto& i : in) n->add_input(i);
  n->add_output(out);
  return n;
}

void add_floats(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims,
                const std::vector<float>& v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  t->set_raw_data(v.data(), v.size() * sizeof(float));
}

/// model.onnx with each Gather of an initializer at runtime indices rewritten as above.
std::string opencv_graph(const std::string& model, int* rewritten) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(read_text(model + "/model.onnx"))) fail("model.onnx does not parse");
  auto* g = proto.mutable_graph();
  // OpenCV 4.6 tracks shapes at import, and with a symbolic batch it sizes the dense and the
  // indices paths differently (then takes an Add of the two for a broadcast): a fixed batch.
  for (auto& input : *g->mutable_input())
    input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(
      chunk_rows);
  std::unordered_map<std::string, int64_t> rows;  // initializer → its first dimension
  for (const auto& t : g->initializer()) rows[t.name()] = t.dims_size() > 0 ? t.dims(0) : 0;
  onnx::GraphProto out = *g;
  out.clear_node();
  *rewritten = 0;
  for (const auto& node : g->node()) {
    const bool lookup = node.op_type() == "Gather" && rows.count(node.input(0))
                        && !rows.count(node.input(1));
    if (!lookup) {
      *out.add_node() = node;
      continue;
    }
    const auto& p = node.output(0);
    const int64_t v = rows[node.input(0)];
    std::vector<float> ones(static_cast<std::size_t>(v), 1.0f), minus_rows(ones.size());
    for (int64_t r = 0; r < v; ++r) minus_rows[static_cast<std::size_t>(r)] = -float(r);
    auto* shape = out.add_initializer();
    shape->set_name(p + "/column");
    shape->set_data_type(onnx::TensorProto::INT64);
    shape->add_dims(2);
    const int64_t column[2] = {-1, 1};
    shape->set_raw_data(column, sizeof column);
    add_floats(&out, p + "/ones", {1, v}, ones);
    add_floats(&out, p + "/minus_rows", {v}, minus_rows);
    add_floats(&out, p + "/one", {}, {1.0f});
    add(&out, "Reshape", {node.input(1), p + "/column"}, p + "/idx");      // [N, 1]
    auto* cast = add(&out, "Cast", {p + "/idx"}, p + "/idx_f");
    auto* to = cast->add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(onnx::TensorProto::FLOAT);
    add(&out, "MatMul", {p + "/idx_f", p + "/ones"}, p + "/spread");      // [N, V]: idx
    add(&out, "Add", {p + "/spread", p + "/minus_rows"}, p + "/offset");  // idx − r
    add(&out, "Abs", {p + "/offset"}, p + "/distance");
    add(&out, "Neg", {p + "/distance"}, p + "/minus_distance");
    add(&out, "Add", {p + "/minus_distance", p + "/one"}, p + "/closeness");
    add(&out, "Relu", {p + "/closeness"}, p + "/onehot");                // 1 at r = idx
    add(&out, "MatMul", {p + "/onehot", node.input(0)}, p);              // [N, dim]: the row
    ++*rewritten;
  }
  *g = out;
  std::string bytes;
  proto.SerializeToString(&bytes);
  return bytes;
}

/// OpenCV's probabilities for every row of `rows`.
std::vector<float> predict_with_opencv(const std::string& model, const criteo_batch& rows) {
  int rewritten = 0;
  const auto bytes = opencv_graph(model, &rewritten);
  cv::dnn::Net net = cv::dnn::readNetFromONNX(bytes.data(), bytes.size());
  std::vector<std::unordered_map<uint64_t, int64_t>> vocab;
  for (int f = 0; f < actorps::criteo_categorical_fields; ++f) vocab.push_back(read_vocab(model, f));
  constexpr int fields = actorps::criteo_categorical_fields, dense = actorps::criteo_dense_fields;
  std::vector<float> out;
  for (std::size_t first = 0; first < rows.rows(); first += chunk_rows) {
    const int n = static_cast<int>(std::min<std::size_t>(chunk_rows, rows.rows() - first));
    // chunk_rows rows always (the graph's fixed batch), the last chunk padded with zeros
    cv::Mat x(chunk_rows, dense, CV_32F, cv::Scalar(0));
    std::copy_n(rows.dense.data() + first * dense, std::size_t(n) * dense, x.ptr<float>());
    cv::Mat idx(chunk_rows, fields, CV_32F, cv::Scalar(0));  // OpenCV 4.6: every blob is float
    for (int r = 0; r < n; ++r)
      for (int f = 0; f < fields; ++f) {
        const auto at = vocab[f].find(rows.keys[(first + r) * fields + f]);
        idx.at<float>(r, f) = at == vocab[f].end() ? 0.0f : static_cast<float>(at->second);
      }
    net.setInput(x, "dense");
    net.setInput(idx, "indices");
    const cv::Mat p = net.forward("probability");
    if (p.total() != static_cast<std::size_t>(chunk_rows) || p.type() != CV_32F)
      fail("OpenCV's output has " + std::to_string(p.total()) + " values for " +
           std::to_string(chunk_rows) + " rows");
    out.insert(out.end(), p.ptr<float>(), p.ptr<float>() + n);
  }
  std::printf("  OpenCV ran model.onnx with %d embedding Gathers rewritten as one-hot products\n",
              rewritten);
  return out;
}

/// Trains and exports `model_flag`, then fails unless OpenCV and actorps predict agree on every
/// test line.
void check(const std::string& scratch, const std::string& model_flag, int epochs,
           const criteo_batch& rows) {
  const auto model = train_and_export(scratch, model_flag, epochs);
  const auto ours = predict_with_actorps(model, scratch + "/test.tsv");
  if (ours.size() != rows.rows())
    fail("actorps predict printed " + std::to_string(ours.size()) + " lines for "
         + std::to_string(rows.rows()));
  const auto theirs = predict_with_opencv(model, rows);
  double max_diff = 0;
  int bad = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const double diff = std::fabs(ours[i] - theirs[i]);
    max_diff = std::max(max_diff, diff);
    if (!(diff <= probability_tolerance) && ++bad <= 5)
      std::printf("  line %zu: OpenCV %.9g, actorps %.9g\n", i, double(theirs[i]), ours[i]);
  }
  std::printf("  %s: OpenCV %s vs actorps predict on %zu lines: max probability difference %.3g "
              "(tolerance %.0e)\n", model_flag.c_str(), CV_VERSION, ours.size(), max_diff,
              probability_tolerance);
  if (bad > 0) fail(model_flag + ": " + std::to_string(bad) + " probabilities differ");
}

void run_checks() {
  actorps::test::scratch_dir scratch("actorps_onnx_ctr_opencv");
  const auto gen = actorps::test::run_actorps("gen-data criteo --out " + scratch.path
                                              + " --rows 16000 --test-rows 1000 --seed 5");
  if (gen.status != 0) fail("gen-data failed:\n" + gen.output);
  actorps::criteo_reader reader(scratch.path + "/test.tsv");
  criteo_batch rows, batch;
  while (reader.next_batch(4096, batch) > 0) {
    rows.labels.insert(rows.labels.end(), batch.labels.begin(), batch.labels.end());
    rows.dense.insert(rows.dense.end(), batch.dense.begin(), batch.dense.end());
    rows.keys.insert(rows.keys.end(), batch.keys.begin(), batch.keys.end());
  }
  std::printf("onnx_ctr_opencv_check: %zu test lines\n", rows.rows());
  check(scratch.path, "lr", 1, rows);
  check(scratch.path, "dlrm:8:16-8:16", 3, rows);
}

} // namespace

int main() {
  try {
    run_checks();
  } catch (const std::exception& e) {  // OpenCV refusing the graph, a reader error, ...
    fail(e.what());
  }
  std::printf("onnx_ctr_opencv_check: passed\n");
  return 0;
}
