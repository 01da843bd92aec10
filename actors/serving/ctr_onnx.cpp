#include "actors/serving/ctr_onnx.hpp"

#include "actors/serving/onnx_builder.hpp"

namespace actorps {

namespace {

using namespace onnx_build;

std::string field_name(std::size_t f) { return "C" + std::to_string(f + 1); }

/// Each field's column of "indices": the outputs "<field>/index" ([N]).
void add_field_indices(onnx::GraphProto* graph, std::size_t fields) {
  for (std::size_t f = 0; f < fields; ++f) {
    const auto field = field_name(f);
    add_int64_initializer(graph, field + "/field", {}, {static_cast<int64_t>(f)});
    set_attribute(add_node(graph, "Gather", field + "/index",
                           {onnx_indices_input, field + "/field"}, field + "/index"),
                  "axis", int64_t{1});  // [N]: the field's column of indices
  }
}

/// Each field's row of `matrices` (rows of `dim` floats, laid along the served vocabulary),
/// looked up: the outputs "<prefix><field>/row" ([N, dim]) in field order.
std::vector<std::string> add_lookups(onnx::GraphProto* graph, const ctr_model& model,
                                     const std::string& table,
                                     const std::vector<ctr_field>& matrices, int64_t dim,
                                     const std::string& prefix) {
  std::vector<std::string> looked_up;
  for (std::size_t f = 0; f < matrices.size(); ++f) {
    const auto field = field_name(f);
    const auto keys = served_keys(model, f);
    const auto rows = rows_along(matrices[f], keys, static_cast<std::size_t>(dim));
    const auto matrix = table + "/" + field;
    add_initializer(graph, matrix, {static_cast<int64_t>(keys.size()) + 1, dim}, rows.data());
    set_attribute(add_node(graph, "Gather", prefix + field + "/lookup", {matrix, field + "/index"},
                           prefix + field + "/row"),
                  "axis", int64_t{0});  // [N, dim]
    looked_up.push_back(prefix + field + "/row");
  }
  return looked_up;
}

/// Dense layers slots[first..], first a MatMul and an Add per layer, Relu after each but (when
/// `relu_last` is false) the last; returns the output's name.
std::string add_mlp(onnx::GraphProto* graph, const ctr_model& model,
                    const std::vector<tensor_slot>& slots, std::size_t first, std::size_t layers,
                    std::string x, bool relu_last) {
  for (std::size_t l = 0; l < layers; ++l) {
    const auto& kernel = slots[first + 2 * l];
    const auto& bias = slots[first + 2 * l + 1];
    for (const auto* slot : {&kernel, &bias})
      add_initializer(graph, slot->name, {slot->shape.begin(), slot->shape.end()},
                      model.dense.data() + slot->offset);
    const auto layer = kernel.name.substr(0, kernel.name.find('/'));  // "bottom0"
    add_node(graph, "MatMul", layer + "/matmul", {x, kernel.name}, layer + "/xw");
    add_node(graph, "Add", layer + "/add", {layer + "/xw", bias.name}, layer + "/z");
    x = layer + "/z";
    if (relu_last || l + 1 < layers) {
      add_node(graph, "Relu", layer + "/relu", {x}, layer + "/a");
      x = layer + "/a";
    }
  }
  return x;
}

/// dlrm: bottom MLP, interaction, top MLP; returns the logit's name.
std::string add_dlrm(onnx::GraphProto* graph, const ctr_model& model,
                     const std::vector<std::string>& embeddings) {
  const auto slots = model.tensor_slots();
  const auto& shape = model.shape;
  const auto bottom_layers = shape.bottom.size() + 1;
  const auto top_layers = shape.top.size() + 1;
  const auto x0 = add_mlp(graph, model, slots, 0, bottom_layers, onnx_dense_input, true);
  const int64_t t = shape.vectors(), dim = shape.dim;

  std::vector<std::string> vectors{x0};
  vectors.insert(vectors.end(), embeddings.begin(), embeddings.end());
  set_attribute(add_node(graph, "Concat", "interaction/concat", vectors, "interaction/flat"),
                "axis", int64_t{1});  // [N, t·dim]
  add_int64_initializer(graph, "interaction/vectors_shape", {3}, {-1, t, dim});
  add_node(graph, "Reshape", "interaction/vectors",  // [N, t, dim]
           {"interaction/flat", "interaction/vectors_shape"}, "interaction/vectors");
  set_attribute(add_node(graph, "Transpose", "interaction/transpose", {"interaction/vectors"},
                         "interaction/vectors_t"),
                "perm", std::vector<int64_t>{0, 2, 1});
  add_node(graph, "MatMul", "interaction/gram", {"interaction/vectors", "interaction/vectors_t"},
           "interaction/gram");  // [N, t, t]: every v_i · v_j
  add_int64_initializer(graph, "interaction/gram_shape", {2}, {-1, t * t});
  add_node(graph, "Reshape", "interaction/gram_flat",
           {"interaction/gram", "interaction/gram_shape"}, "interaction/gram_flat");
  // Row i's entries j < i lie at i·t + j: one slice per row keeps the pair order (i, j), i > j,
  // row by row — p = i(i−1)/2 + j, as kernels/ctr_math.hpp numbers them.
  std::vector<std::string> top_in{x0};
  add_int64_initializer(graph, "interaction/axis", {1}, {1});
  for (int64_t i = 1; i < t; ++i) {
    const auto row = "interaction/row" + std::to_string(i);
    add_int64_initializer(graph, row + "/start", {1}, {i * t});
    add_int64_initializer(graph, row + "/end", {1}, {i * t + i});
    add_node(graph, "Slice", row, {"interaction/gram_flat", row + "/start", row + "/end",
                                   "interaction/axis"}, row);  // [N, i]
    top_in.push_back(row);
  }
  set_attribute(add_node(graph, "Concat", "top/concat", top_in, "top/in"), "axis", int64_t{1});
  return add_mlp(graph, model, slots, 2 * bottom_layers, top_layers, "top/in", false);
}

/// wdl and deepfm: the wide part, the FM term (deepfm) and the deep MLP in one Sum; returns
/// the logit's name.
std::string add_wide_deep(onnx::GraphProto* graph, const ctr_model& model,
                          const std::vector<std::string>& embeddings,
                          const std::vector<std::string>& weights) {
  const auto slots = model.tensor_slots();  // linear/kernel [13, 1], deep<l>/kernel, deep<l>/bias
  add_initializer(graph, slots[0].name, {slots[0].shape.begin(), slots[0].shape.end()},
                  model.dense.data() + slots[0].offset);
  add_node(graph, "MatMul", "linear/matmul", {onnx_dense_input, slots[0].name}, "linear/xw");
  std::vector<std::string> terms{"linear/xw"};
  terms.insert(terms.end(), weights.begin(), weights.end());

  std::vector<std::string> deep_in(embeddings);
  deep_in.push_back(onnx_dense_input);
  set_attribute(add_node(graph, "Concat", "deep/concat", deep_in, "deep/in"), "axis",
                int64_t{1});  // [N, fields·dim + 13]: the embeddings field by field, then dense
  terms.push_back(add_mlp(graph, model, slots, 1, model.hidden.size() + 1, "deep/in", false));

  if (model.kind == ctr_kind::deepfm) {
    // Σ_f e_f and Σ_f e_f² as products with `fold`, dim identities stacked [fields·dim, dim];
    // 0.5 · Σ_d ((Σ e)² − Σ e²) as a product with a column of halves.
    const int64_t fields = model.shape.fields, dim = model.shape.dim;
    std::vector<float> fold(static_cast<std::size_t>(fields * dim * dim), 0.0f);
    for (int64_t f = 0; f < fields; ++f)
      for (int64_t d = 0; d < dim; ++d) fold[static_cast<std::size_t>((f * dim + d) * dim + d)] = 1;
    const std::vector<float> halves(static_cast<std::size_t>(dim), 0.5f);
    add_initializer(graph, "fm/fold", {fields * dim, dim}, fold.data());
    add_initializer(graph, "fm/halves", {dim, 1}, halves.data());
    set_attribute(add_node(graph, "Concat", "fm/concat", embeddings, "fm/flat"), "axis",
                  int64_t{1});  // [N, fields·dim]
    add_node(graph, "MatMul", "fm/sum", {"fm/flat", "fm/fold"}, "fm/sum");  // [N, dim]
    add_node(graph, "Mul", "fm/square_of_sum", {"fm/sum", "fm/sum"}, "fm/square_of_sum");
    add_node(graph, "Mul", "fm/squares", {"fm/flat", "fm/flat"}, "fm/squares");
    add_node(graph, "MatMul", "fm/sum_of_squares", {"fm/squares", "fm/fold"},
             "fm/sum_of_squares");
    add_node(graph, "Sub", "fm/difference", {"fm/square_of_sum", "fm/sum_of_squares"},
             "fm/difference");
    add_node(graph, "MatMul", "fm/term", {"fm/difference", "fm/halves"}, "fm/term");  // [N, 1]
    terms.push_back("fm/term");
  }
  add_node(graph, "Sum", "logit", terms, "logit");
  return "logit";
}

/// lr: the dense part and the fields' weights in one Sum; returns the logit's name.
std::string add_lr(onnx::GraphProto* graph, const ctr_model& model,
                   const std::vector<std::string>& weights) {
  const auto slots = model.tensor_slots();  // dense/kernel [13], bias [1]
  add_initializer(graph, slots[0].name, {static_cast<int64_t>(slots[0].size), 1},
                  model.dense.data() + slots[0].offset);  // a column: [N, 13] · [13, 1]
  add_initializer(graph, slots[1].name, {1}, model.dense.data() + slots[1].offset);
  add_node(graph, "MatMul", "dense/matmul", {onnx_dense_input, slots[0].name}, "dense/xw");
  add_node(graph, "Add", "dense/add", {"dense/xw", slots[1].name}, "dense/z");  // [N, 1]
  // One Sum of the 27 [N, 1] terms.
  std::vector<std::string> terms{"dense/z"};
  terms.insert(terms.end(), weights.begin(), weights.end());
  add_node(graph, "Sum", "logit", terms, "logit");
  return "logit";
}

} // namespace

std::string make_ctr_onnx_model(const ctr_model& model, const std::string& producer_version) {
  auto proto = new_model(
    producer_version,
    std::string(to_string(model.kind)) + " (" + model.name + ") on Criteo lines. Inputs: \"dense\" "
    "float32 [N, 13] = log(1 + max(I_j, 0)), 0 when missing; \"indices\" int64 [N, 26] = the row "
    "of field C_f's key in vocab/C<f>.tsv, 0 for a key not in it. Output: \"probability\" "
    "float32 [N, 1], p(click).",
    std::string("actorps_") + to_string(model.kind));
  auto* graph = proto.mutable_graph();
  describe(graph->add_input(), onnx_dense_input, onnx::TensorProto::FLOAT,
           {-1, model.shape.dense_in});
  describe(graph->add_input(), onnx_indices_input, onnx::TensorProto::INT64,
           {-1, static_cast<int64_t>(model.fields.size())});
  add_field_indices(graph, model.fields.size());
  const auto looked_up =
    add_lookups(graph, model, model.table, model.fields, model.dim(), "");
  std::string logit;
  if (model.has_wide())
    logit = add_wide_deep(graph, model, looked_up,
                          add_lookups(graph, model, ctr_wide_table, model.wide, 1, "wide/"));
  else
    logit = model.kind == ctr_kind::lr ? add_lr(graph, model, looked_up)
                                       : add_dlrm(graph, model, looked_up);
  add_node(graph, "Sigmoid", "sigmoid", {logit}, onnx_probability_output);
  describe(graph->add_output(), onnx_probability_output, onnx::TensorProto::FLOAT, {-1, 1});
  return checked_bytes(proto);
}

} // namespace actorps
