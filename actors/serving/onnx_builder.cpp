#include "actors/serving/onnx_builder.hpp"

#include "actors/serving/onnx_model.hpp"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <functional>
#include <numeric>

namespace actorps::onnx_build {

onnx::ModelProto new_model(const std::string& producer_version, const std::string& doc,
                           const std::string& graph) {
  onnx::ModelProto proto;
  proto.set_ir_version(onnx_ir_version);
  proto.set_producer_name("actorps");
  proto.set_producer_version(producer_version);
  proto.set_doc_string(doc);
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(onnx_opset);
  proto.mutable_graph()->set_name(graph);
  return proto;
}

void describe(onnx::ValueInfoProto* value, const std::string& name, int32_t elem_type,
              const std::vector<int64_t>& dims) {
  value->set_name(name);
  auto* tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  for (auto d : dims) {
    if (d < 0)
      shape->add_dim()->set_dim_param("N");
    else
      shape->add_dim()->set_dim_value(d);
  }
}

void add_initializer(onnx::GraphProto* graph, const std::string& name,
                     const std::vector<int64_t>& dims, const float* values) {
  auto* t = graph->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  const auto n = std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<int64_t>());
  t->set_raw_data(values, static_cast<std::size_t>(n) * sizeof(float));  // little-endian float32
}

void add_int64_initializer(onnx::GraphProto* graph, const std::string& name,
                           const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
  auto* t = graph->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (auto d : dims) t->add_dims(d);
  t->set_raw_data(values.data(), values.size() * sizeof(int64_t));  // little-endian int64
}

onnx::NodeProto* add_node(onnx::GraphProto* graph, const char* op, const std::string& name,
                          const std::vector<std::string>& inputs, const std::string& output) {
  auto* node = graph->add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const auto& in : inputs) node->add_input(in);
  node->add_output(output);
  return node;
}

void set_attribute(onnx::NodeProto* node, const char* name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void set_attribute(onnx::NodeProto* node, const char* name, const std::vector<int64_t>& values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto v : values) a->add_ints(v);
}

std::string checked_bytes(const onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
    onnx::ModelProto inferred = model;
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    throw onnx_model_error(std::string("the ONNX checker refused the graph: ") + e.what());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw onnx_model_error("serialising the ONNX model failed");
  return bytes;
}

} // namespace actorps::onnx_build
