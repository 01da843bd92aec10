// Exporting parameters: the three files of a version, what each holds, and how a reader
// refuses a damaged model.capnp. Library level; tests/export_cli_test.cpp drives the binary.
#include "actors/model/mlp_plugin.hpp"
#include "actors/serving/exported_model.hpp"
#include "actors/serving/file_bytes.hpp"
#include "actors/serving/model_export.hpp"
#include "actors/serving/onnx_model.hpp"
#include "kernels/parameter_init.hpp"

#include "tests/model_bytes_edit.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>

namespace actorps {
namespace {

namespace fs = std::filesystem;
using test::dir_entries;
using test::dir_contents;
const std::set<std::string> export_files{"metadata.json", "model.capnp", "model.onnx"};

/// A small model with non-zero biases and the synthetic test split it is exported with.
struct export_case {
  train_spec spec;
  std::vector<float> params;
  dataset test;
  run_info run;
  export_case() {
    spec.model = mlp_model({16, 12, 8, 10});
    spec.workers = 3;
    spec.shards = 2;
    spec.mode = consistency::sync;
    spec.optimizer.kind = optimizer_kind::adam;
    spec.optimizer.learning_rate = 0.001f;
    params = initial_parameters(*mlp_layers(spec.model), 5);
    for (std::size_t i = 0; i < params.size(); ++i)
      if (params[i] == 0.0f) params[i] = 0.01f * static_cast<float>(i % 7);
    test = make_synthetic(300, 16, 5, false);
    run.source = "simulate";
    run.dataset = "synthetic";
    run.batch = 32;
    run.clocks = 40;
    run.samples = 3 * 40 * 32;
    run.wall_s = 1.5;
    run.backend = "cpu";
  }
};

void check_refused(const std::string& bytes, const std::string& words) {
  try {
    decode_exported_model(bytes, "/m/model.capnp");
    FAIL("accepted a damaged model");
  } catch (const model_file_error& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.rfind("/m/model.capnp: ", 0) == 0);
    CHECK(msg.find(words) != std::string::npos);
  }
}

} // namespace

TEST_CASE("export: versions 1 then 2, each with the three files, and 1/ stays byte for byte") {
  const export_case c;
  test::scratch_dir scratch;
  const std::string root = scratch.path + "/export";
  const auto first = export_model(c.spec, c.params, c.run, c.test, root);
  CHECK(first.version == 1);
  CHECK(first.path == root + "/1");
  CHECK(dir_entries(first.path) == export_files);
  const auto before = dir_contents(first.path);
  CHECK(before.at("model.capnp").size() == first.capnp_bytes);
  CHECK(before.at("model.onnx").size() == first.onnx_bytes);
  CHECK(before.at("metadata.json").size() == first.metadata_bytes);

  auto changed = c.params;
  changed[0] += 1.0f;
  const auto second = export_model(c.spec, changed, c.run, c.test, root);
  CHECK(second.version == 2);
  CHECK(dir_entries(root) == std::set<std::string>{"1", "2"});  // and no temporary left
  CHECK(dir_contents(first.path) == before);
  CHECK(dir_contents(second.path).at("model.capnp") != before.at("model.capnp"));
}

TEST_CASE("export: model.capnp holds the spec and every tensor, read back bit for bit") {
  const export_case c;
  test::scratch_dir scratch;
  const auto done = export_model(c.spec, c.params, c.run, c.test, scratch.path);
  const auto model = load_model_directory(done.path);
  CHECK(model.layers == *mlp_layers(c.spec.model));
  CHECK(model.input_divisor == 1.0f);  // synthetic features are used as they are
  REQUIRE(model.parameters.size() == c.params.size());
  CHECK(std::memcmp(model.parameters.data(), c.params.data(), c.params.size() * 4) == 0);

  // Without our reader: the schema alone names and shapes the tensors.
  const auto bytes = read_file_bytes(done.path + "/model.capnp");
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  capnp::FlatArrayMessageReader reader(words);
  auto root = reader.getRoot<exported::ExportedModel>();
  REQUIRE(root.getTensors().size() == 6);
  auto kernel1 = root.getTensors()[2];
  CHECK(std::string(kernel1.getName().cStr()) == "dense1/kernel");
  REQUIRE(kernel1.getShape().size() == 2);
  CHECK(kernel1.getShape()[0] == 12);
  CHECK(kernel1.getShape()[1] == 8);
  const std::size_t kernel1_offset = 16 * 12 + 12;
  float first_value = 0;
  std::memcpy(&first_value, kernel1.getValues().begin(), 4);
  CHECK(first_value == c.params[kernel1_offset]);
  CHECK(std::string(root.getTensors()[5].getName().cStr()) == "dense2/bias");
  CHECK(root.getOutputActivation() == exported::Activation::SOFTMAX);
}

TEST_CASE("export: model.onnx passes the ONNX checker with the documented interface") {
  const export_case c;
  test::scratch_dir scratch;
  const auto done = export_model(c.spec, c.params, c.run, c.test, scratch.path);
  onnx::ModelProto proto;
  REQUIRE(proto.ParseFromString(read_file_bytes(done.path + "/model.onnx")));
  CHECK_NOTHROW(onnx::checker::check_model(proto));
  CHECK(proto.ir_version() == onnx_ir_version);
  REQUIRE(proto.opset_import_size() == 1);
  CHECK(proto.opset_import(0).version() == 13);
  const auto& g = proto.graph();
  REQUIRE(g.input_size() == 1);
  CHECK(g.input(0).name() == "input");
  const auto& in_shape = g.input(0).type().tensor_type().shape();
  REQUIRE(in_shape.dim_size() == 2);
  CHECK(in_shape.dim(0).dim_param() == "N");
  CHECK(in_shape.dim(1).dim_value() == 16);
  REQUIRE(g.output_size() == 1);
  CHECK(g.output(0).name() == "probabilities");
  CHECK(g.output(0).type().tensor_type().shape().dim(1).dim_value() == 10);
  std::vector<std::string> ops;
  for (const auto& node : g.node()) ops.push_back(node.op_type());
  CHECK(ops == std::vector<std::string>{"MatMul", "Add", "Relu", "MatMul", "Add", "Relu",
                                        "MatMul", "Add", "Softmax"});
  const auto& softmax = g.node(g.node_size() - 1);
  REQUIRE(softmax.attribute_size() == 1);
  CHECK(softmax.attribute(0).name() == "axis");
  CHECK(softmax.attribute(0).i() == 1);  // over the classes of each row, not over the batch
  REQUIRE(g.initializer_size() == 6);
  const auto& bias2 = g.initializer(5);
  CHECK(bias2.name() == "dense2/bias");
  REQUIRE(bias2.raw_data().size() == 10 * 4);
  CHECK(std::memcmp(bias2.raw_data().data(), c.params.data() + c.params.size() - 10, 40) == 0);
}

TEST_CASE("export: metadata.json has spec, training and the exported parameters' test metrics") {
  const export_case c;
  test::scratch_dir scratch;
  const auto done = export_model(c.spec, c.params, c.run, c.test, scratch.path);
  const auto meta = nlohmann::json::parse(read_file_bytes(done.path + "/metadata.json"));
  const auto again = evaluate_model(load_model_directory(done.path), c.test);
  CHECK(meta["test_accuracy"].get<double>() == again.accuracy);
  CHECK(meta["test_loss"].get<double>() == again.loss);
  CHECK(meta["evaluation"]["rows"] == 300);
  CHECK(meta["evaluation"]["correct"] == again.correct);
  CHECK(again.accuracy > 0.0);  // random weights, but not a degenerate all-wrong model
  CHECK(meta["model"]["layers"] == nlohmann::json::array({16, 12, 8, 10}));
  CHECK(meta["model"]["parameters"] == c.params.size());
  CHECK(meta["input"]["name"] == "input");
  CHECK(meta["input"]["divisor"] == 1.0);
  CHECK(meta["output"]["name"] == "probabilities");
  const auto& t = meta["training"];
  CHECK(t["mode"] == "sync");
  CHECK(t["workers"] == 3);
  CHECK(t["shards"] == 2);
  CHECK(t["optimizer"]["name"] == "adam");
  CHECK(t["optimizer"]["learning_rate"] == 0.001);
  CHECK(t["clocks"] == 40);
  CHECK(t["samples"] == 3840);
  CHECK(t["dataset"] == "synthetic");
  CHECK(meta["actorps_version"] == ACTORPS_VERSION);
  const std::regex iso8601("[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]Z");
  CHECK(std::regex_match(meta["created_utc"].get<std::string>(), iso8601));
}

TEST_CASE("export: a Fashion-MNIST model records the training input scaling, pixel / 255") {
  export_case c;
  c.run.dataset = "fashion-mnist";
  test::scratch_dir scratch;
  const auto done = export_model(c.spec, c.params, c.run, c.test, scratch.path);
  CHECK(load_model_directory(done.path).input_divisor == 255.0f);
  const auto meta = nlohmann::json::parse(read_file_bytes(done.path + "/metadata.json"));
  CHECK(meta["input"]["divisor"] == 255.0);
}

TEST_CASE("export: parameters that do not fit the spec are refused before anything is written") {
  const export_case c;
  test::scratch_dir scratch;
  auto short_params = c.params;
  short_params.pop_back();
  CHECK_THROWS_AS(export_model(c.spec, short_params, c.run, c.test, scratch.path + "/e"),
                  std::invalid_argument);
  auto wide = c.test;
  wide.cols = 17;
  CHECK_THROWS_AS(export_model(c.spec, c.params, c.run, wide, scratch.path + "/e"),
                  std::invalid_argument);
  CHECK(!fs::exists(scratch.path + "/e"));
}

TEST_CASE("evaluate_model: accuracy, loss and confusion matrix from the probabilities") {
  // 2 inputs → 2 classes; logits = 3·x, so the larger input wins.
  exported_model model;
  model.layers = {2, 2};
  model.parameters = {3, 0, 0, 3, 0, 0};
  dataset d;
  d.rows = 4;
  d.cols = 2;
  d.classes = 2;
  d.x = {1, 0, 0, 1, 1, 0, 0.5f, 0.25f};
  d.y = {0, 1, 1, 1};  // rows 0 and 1 right, 2 and 3 predicted 0 but labelled 1
  const auto m = evaluate_model(model, d);
  CHECK(m.rows == 4);
  CHECK(m.correct == 2);
  CHECK(m.accuracy == 0.5);
  CHECK(m.confusion == std::vector<int64_t>{1, 0, 2, 1});
  auto nll = [](double own, double other) {
    return std::log(std::exp(own) + std::exp(other)) - own;
  };
  const double expected = (nll(3, 0) + nll(3, 0) + nll(0, 3) + nll(0.75, 1.5)) / 4;
  CHECK(m.loss == doctest::Approx(expected).epsilon(1e-6));
}

TEST_CASE("tensor_slots: block_layout's tensors, with their shapes") {
  const std::vector<int> layers{784, 256, 128, 10};
  const auto slots = tensor_slots(layers);
  const block_layout layout(mlp_model(layers), 4096, 3);
  REQUIRE(slots.size() == layout.tensors().size());
  for (std::size_t t = 0; t < slots.size(); ++t) {
    CAPTURE(t);
    CHECK(slots[t].name == layout.tensors()[t].name);
    CHECK(slots[t].offset == layout.tensors()[t].offset);
    CHECK(slots[t].size == layout.tensors()[t].size);
    std::size_t product = 1;
    for (auto d : slots[t].shape) product *= d;
    CHECK(product == slots[t].size);
  }
  CHECK(slots[2].shape == std::vector<std::size_t>{256, 128});
  CHECK(slots[5].shape == std::vector<std::size_t>{10});
}

TEST_CASE("model.capnp: a damaged or mismatched file is refused, naming it and the problem") {
  const export_case c;
  const exported_model model{*mlp_layers(c.spec.model), c.params, 1.0f};
  const auto good = encode_exported_model(model);
  CHECK(decode_exported_model(good, "/m/model.capnp").parameters == c.params);
  check_refused("", "empty");
  check_refused(good.substr(0, good.size() / 2 + 3), "truncated");
  check_refused(good.substr(0, good.size() / 2 / 8 * 8), "truncated");
  check_refused(std::string(4096, '\x5a'), "not a model.capnp");
  check_refused(good + std::string(8, '\0'), "bytes after the end");
  auto damaged = [&](auto edit) { return test::edited_model(good, edit); };
  check_refused(damaged([](auto m) { m.setFormatVersion(4); }), "format version 4");
  check_refused(damaged([](auto m) { m.getLayers().set(1, 13); }),
                "tensor dense0/kernel has shape [16, 12] but the spec (layers 16-13-8-10) needs "
                "[16, 13]");
  check_refused(damaged([](auto m) { m.initLayers(1).set(0, 16); }), "at least 2");
  check_refused(damaged([](auto m) { m.getTensors()[3].setName("dense1/weights"); }),
                "named 'dense1/weights', expected dense1/bias");
  check_refused(damaged([](auto m) { m.getTensors()[1].initValues(8); }),
                "tensor dense0/bias has 8 bytes of values, its shape [12] needs 48");
  check_refused(damaged([](auto m) {
                  auto v = m.getTensors()[0].getValues();
                  const float nan = std::numeric_limits<float>::quiet_NaN();
                  std::memcpy(v.begin() + 40, &nan, 4);
                }),
                "dense0/kernel holds a NaN");
  check_refused(damaged([](auto m) { m.setOutputActivation(exported::Activation::RELU); }),
                "unsupported activations");
}

} // namespace actorps
