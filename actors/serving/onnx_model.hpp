// model.onnx: the exported MLP as a standard ONNX graph, for any ONNX runtime.
//
//   input "input" float32 [N, in]  (N dynamic; scaled as in training)
//   → MatMul(dense0/kernel) → Add(dense0/bias) → Relu → … → MatMul → Add → Softmax(axis 1)
//   → output "probabilities" float32 [N, classes]
//
// The initializers are model.capnp's tensors with the same names, shapes and bytes. MatMul+Add
// rather than Gemm: OpenCV 4.6 reads a Gemm without transB as if B were [out, in].
// Opset 13 (IR version 7): libonnx 1.12 checks it, OpenCV 4.6's DNN module reads it.
#pragma once

#include "actors/serving/exported_model.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace actorps {

inline constexpr const char* onnx_model_name = "model.onnx";
inline constexpr int64_t onnx_opset = 13;
inline constexpr int64_t onnx_ir_version = 7;
inline constexpr const char* onnx_input_name = "input";
inline constexpr const char* onnx_output_name = "probabilities";

/// The ONNX checker or shape inference refused the graph; what() carries its message.
struct onnx_model_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The serialised ModelProto of `model`, after onnx::checker::check_model and strict shape
/// inference (which must find [N, classes] for the output) accepted it. `producer_version`
/// is recorded as the producer's version.
std::string make_onnx_model(const exported_model& model, const std::string& producer_version);

} // namespace actorps
