// model.onnx of a CTR model (ctr_model.hpp), opset 13 like the MLP's (onnx_model.hpp):
//
//   inputs  "dense"   float32 [N, 13]  the integer features already log(1 + max(x, 0))
//           "indices" int64   [N, 26]  per field C1..C26 the key's row in vocab/C<f>.tsv
//                                      (0: a key the model never saw)
//   output  "probability" float32 [N, 1]  p(click)
//
// Per field f: Gather(indices, f, axis 1) → its rows [N], Gather(<table>/C<f>, rows) → [N, dim]
// from the field's matrix (row 0 zeros), the initializer of model.capnp's rows for that field.
//   lr:   Sum of the 26 weights [N, 1] + dense · dense/kernel ([13, 1] here, [13] in
//         model.capnp) + bias → Sigmoid
//   dlrm: x0 = the bottom MLP (MatMul, Add, Relu per layer); v = Reshape(Concat(x0, e_C1, …,
//         e_C26), [N, 27, dim]); the Gram matrix MatMul(v, Transpose(v)) [N, 27, 27], flattened
//         to [N, 729]; for i = 1..26 a Slice of row i's entries j < i; Concat(x0, those slices)
//         is the top MLP's input [N, dim + 351] in kernels/ctr_math.hpp's pair order (1,0),
//         (2,0), (2,1), (3,0), …; the top MLP (ReLU between layers) → logit [N, 1] → Sigmoid.
//   wdl:  Sum of the 26 wide weights (Gather from wide/C<f>, [N, 1]), dense · linear/kernel and
//         the deep MLP on Concat(e_C1, …, e_C26, dense) (ReLU between layers) → Sigmoid
//   deepfm: wdl's Sum with the FM term: Σ e and Σ e² over the fields as MatMuls with stacked
//         identities, Sub, and a MatMul with a column of 0.5 for the sum over dim.
// Both tables are laid along the field's served vocabulary (served_keys): one index per field.
// Slices rather than a Gather of the lower triangle: OpenCV 4.6's importer takes a Gather only
// with one constant index. Its embedding Gathers (runtime indices) it does not take at all:
// tests/onnx_ctr_opencv_check.cpp rewrites just those into an exact one-hot product to run it.
#pragma once

#include "actors/serving/ctr_model.hpp"

#include <string>

namespace actorps {

inline constexpr const char* onnx_dense_input = "dense";
inline constexpr const char* onnx_indices_input = "indices";
inline constexpr const char* onnx_probability_output = "probability";

/// The serialised ModelProto of `model`, after onnx::checker::check_model and strict shape
/// inference accepted it (onnx_model_error otherwise). `producer_version` is recorded as the
/// producer's version.
std::string make_ctr_onnx_model(const ctr_model& model, const std::string& producer_version);

} // namespace actorps
