#include "actors/serving/onnx_model.hpp"

#include "actors/protocol/model_spec.hpp"
#include "actors/serving/onnx_builder.hpp"

#include <cstdio>

namespace actorps {

std::string make_onnx_model(const exported_model& model, const std::string& producer_version) {
  using namespace onnx_build;
  const auto slots = tensor_slots(model.layers);
  char divisor[32];
  std::snprintf(divisor, sizeof divisor, "%g", static_cast<double>(model.input_divisor));
  auto proto = new_model(producer_version,
                         "MLP " + to_string(model.layers) + ": dense layers with ReLU between "
                         "them, softmax output. Input: float32 [N, "
                           + std::to_string(model.layers.front()) + "] = raw value / " + divisor
                           + ".",
                         "actorps_mlp");
  auto* graph = proto.mutable_graph();
  describe(graph->add_input(), onnx_input_name, onnx::TensorProto::FLOAT,
           {-1, model.layers.front()});
  std::string x = onnx_input_name;
  const std::size_t dense_layers = model.layers.size() - 1;
  for (std::size_t l = 0; l < dense_layers; ++l) {
    for (const auto* slot : {&slots[2 * l], &slots[2 * l + 1]})
      add_initializer(graph, slot->name, {slot->shape.begin(), slot->shape.end()},
                      model.parameters.data() + slot->offset);
    const auto dense = "dense" + std::to_string(l);
    // x [N, in] · kernel [in, out], then + bias [out] broadcast over N.
    add_node(graph, "MatMul", dense + "/matmul", {x, slots[2 * l].name}, dense + "/xw");
    add_node(graph, "Add", dense + "/add", {dense + "/xw", slots[2 * l + 1].name}, dense + "/z");
    x = dense + "/z";
    if (l + 1 < dense_layers) {
      add_node(graph, "Relu", dense + "/relu", {x}, dense + "/a");
      x = dense + "/a";
    }
  }
  set_attribute(add_node(graph, "Softmax", "softmax", {x}, onnx_output_name), "axis", int64_t{1});
  describe(graph->add_output(), onnx_output_name, onnx::TensorProto::FLOAT,
           {-1, model.layers.back()});
  return checked_bytes(proto);
}

} // namespace actorps
