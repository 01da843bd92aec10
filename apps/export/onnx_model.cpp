#include "apps/export/onnx_model.hpp"

#include "actors/protocol/model_spec.hpp"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cstdio>

namespace actorps {

namespace {

/// A float32 value of shape [N, width] with N symbolic.
void describe_batch(onnx::ValueInfoProto* value, const std::string& name, int width) {
  value->set_name(name);
  auto* tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tensor->mutable_shape();
  shape->add_dim()->set_dim_param("N");
  shape->add_dim()->set_dim_value(width);
}

void add_initializer(onnx::GraphProto* graph, const tensor_slot& slot, const float* params) {
  auto* t = graph->add_initializer();
  t->set_name(slot.name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : slot.shape) t->add_dims(static_cast<int64_t>(d));
  t->set_raw_data(params + slot.offset, slot.size * sizeof(float));  // little-endian float32
}

onnx::NodeProto* add_node(onnx::GraphProto* graph, const char* op, const std::string& name,
                          std::initializer_list<std::string> inputs, const std::string& output) {
  auto* node = graph->add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const auto& in : inputs) node->add_input(in);
  node->add_output(output);
  return node;
}

} // namespace

std::string make_onnx_model(const exported_model& model, const std::string& producer_version) {
  const auto slots = tensor_slots(model.layers);
  onnx::ModelProto proto;
  proto.set_ir_version(onnx_ir_version);
  proto.set_producer_name("actorps");
  proto.set_producer_version(producer_version);
  char divisor[32];
  std::snprintf(divisor, sizeof divisor, "%g", static_cast<double>(model.input_divisor));
  proto.set_doc_string("MLP " + to_string(model.layers) + ": dense layers with ReLU between "
                       "them, softmax output. Input: float32 [N, "
                       + std::to_string(model.layers.front()) + "] = raw value / " + divisor
                       + ".");
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(onnx_opset);

  auto* graph = proto.mutable_graph();
  graph->set_name("actorps_mlp");
  describe_batch(graph->add_input(), onnx_input_name, model.layers.front());
  std::string x = onnx_input_name;
  const std::size_t dense_layers = model.layers.size() - 1;
  for (std::size_t l = 0; l < dense_layers; ++l) {
    const auto& kernel = slots[2 * l];
    const auto& bias = slots[2 * l + 1];
    add_initializer(graph, kernel, model.parameters.data());
    add_initializer(graph, bias, model.parameters.data());
    const auto dense = "dense" + std::to_string(l);
    // x [N, in] · kernel [in, out], then + bias [out] broadcast over N.
    add_node(graph, "MatMul", dense + "/matmul", {x, kernel.name}, dense + "/xw");
    add_node(graph, "Add", dense + "/add", {dense + "/xw", bias.name}, dense + "/z");
    x = dense + "/z";
    if (l + 1 < dense_layers) {
      add_node(graph, "Relu", dense + "/relu", {x}, dense + "/a");
      x = dense + "/a";
    }
  }
  auto* softmax = add_node(graph, "Softmax", "softmax", {x}, onnx_output_name);
  auto* axis = softmax->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  describe_batch(graph->add_output(), onnx_output_name, model.layers.back());

  try {
    onnx::checker::check_model(proto);
    // Strict inference: each node's output shape must follow, and the declared output must
    // agree with what the graph computes.
    onnx::ModelProto inferred = proto;
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    throw onnx_model_error(std::string("the ONNX checker refused the graph: ") + e.what());
  }
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) throw onnx_model_error("serialising the ONNX model failed");
  return bytes;
}

} // namespace actorps
