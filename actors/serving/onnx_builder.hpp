// What every exported ONNX graph is built with: a model of our opset and IR version, named
// inputs and outputs with a symbolic batch, initializers, nodes, and the final check (the ONNX
// checker and strict shape inference) before serialising. onnx_model.cpp (MLPs) and
// ctr_onnx.cpp (CTR models) use it; internal to the export library.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace actorps::onnx_build {

/// A ModelProto of opset onnx_opset and IR version onnx_ir_version, produced by actorps
/// `producer_version`, with `doc` as its doc string and a graph named `graph`.
onnx::ModelProto new_model(const std::string& producer_version, const std::string& doc,
                           const std::string& graph);

/// A tensor of `elem_type` (onnx::TensorProto::FLOAT, INT64, ...) with the given dimensions,
/// -1 standing for the symbolic batch size "N".
void describe(onnx::ValueInfoProto* value, const std::string& name, int32_t elem_type,
              const std::vector<int64_t>& dims);

/// A float32 initializer of `dims` holding the product of dims values from `values`.
void add_initializer(onnx::GraphProto* graph, const std::string& name,
                     const std::vector<int64_t>& dims, const float* values);
/// An int64 initializer; dims {} makes a scalar.
void add_int64_initializer(onnx::GraphProto* graph, const std::string& name,
                           const std::vector<int64_t>& dims, const std::vector<int64_t>& values);

/// A node of operator `op`, named `name`, with one output.
onnx::NodeProto* add_node(onnx::GraphProto* graph, const char* op, const std::string& name,
                          const std::vector<std::string>& inputs, const std::string& output);
/// An INT attribute, and an INTS one.
void set_attribute(onnx::NodeProto* node, const char* name, int64_t value);
void set_attribute(onnx::NodeProto* node, const char* name, const std::vector<int64_t>& values);

/// Runs onnx::checker::check_model and strict shape inference (each node's output shape must
/// follow, the declared outputs must agree), then serialises. Throws onnx_model_error
/// (onnx_model.hpp) with the checker's message.
std::string checked_bytes(const onnx::ModelProto& model);

} // namespace actorps::onnx_build
