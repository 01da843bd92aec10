#include "actors/serving/ctr_model.hpp"

#include "actors/ps/criteo_keys.hpp"
#include "actors/model/criteo_model.hpp"  // take_layout
#include "actors/model/dlrm_plugin.hpp"
#include "kernels/optimizer.hpp"  // all_finite

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace actorps {

namespace {

/// The lr model's sizes from its arguments ("ftrl", "ftrl:5x4"): its layout (Criteo's unless
/// the name ends in one), one weight per value, no MLP.
dlrm_shape lr_shape(std::string args) {
  ctr_layout layout;
  take_layout(args, layout);
  dlrm_shape shape;
  shape.dense_in = layout.dense;
  shape.fields = layout.fields;
  shape.dim = 1;
  shape.bottom.clear();
  shape.top.clear();
  return shape;
}

/// "lr:ftrl" → "ftrl", "dlrm" → "": what follows the plug-in name.
std::string model_args(const std::string& name) {
  const auto colon = name.find(':');
  return colon == std::string::npos ? "" : name.substr(colon + 1);
}

std::string plugin_name(const std::string& name) { return name.substr(0, name.find(':')); }

/// Throws unless `model`'s dense tensors are `slots` (names and shapes, in order) and it has one
/// table of rows of `dim` floats.
void check_spec(const model_spec& model, const std::vector<tensor_slot>& slots, uint32_t dim) {
  auto fail = [&](const std::string& what) {
    return std::invalid_argument("model " + model.name + ": " + what);
  };
  if (model.tensors.size() != slots.size())
    throw fail(std::to_string(model.tensors.size()) + " dense tensors, expected "
               + std::to_string(slots.size()));
  for (std::size_t t = 0; t < slots.size(); ++t) {
    const auto& have = model.tensors[t];
    const std::vector<std::size_t> shape(have.shape.begin(), have.shape.end());
    if (have.name != slots[t].name || shape != slots[t].shape)
      throw fail("tensor " + describe(have) + " where " + slots[t].name + " was expected");
  }
  if (model.sparse_tables.size() != 1 || model.sparse_tables[0].config.dim != dim)
    throw fail("expected one sparse table of rows of " + std::to_string(dim) + " floats");
}

} // namespace

const char* to_string(ctr_kind kind) { return kind == ctr_kind::lr ? "lr" : "dlrm"; }

uint32_t ctr_field::row_of(uint64_t key) const {
  const auto at = std::lower_bound(keys.begin(), keys.end(), key);
  if (at == keys.end() || *at != key) return 0;
  return static_cast<uint32_t>(at - keys.begin()) + 1;
}

std::vector<tensor_slot> ctr_model::tensor_slots() const {
  std::vector<tensor_slot> slots;
  std::size_t offset = 0;
  auto add = [&](std::string name, std::vector<std::size_t> shape) {
    const auto size = std::accumulate(shape.begin(), shape.end(), std::size_t{1},
                                      std::multiplies<std::size_t>());
    slots.push_back({std::move(name), std::move(shape), offset, size});
    offset += size;
  };
  if (kind == ctr_kind::lr) {
    add("dense/kernel", {static_cast<std::size_t>(shape.dense_in)});
    add("bias", {1});
  } else {
    for (auto& [name, dims] : dlrm_tensors(shape))
      add(name, std::vector<std::size_t>(dims.begin(), dims.end()));
  }
  return slots;
}

gathered_rows merge_rows(const std::vector<gathered_rows>& parts, uint32_t dim) {
  std::vector<std::pair<uint64_t, const float*>> all;
  for (const auto& p : parts) {
    if (p.values.size() != p.keys.size() * dim)
      throw std::invalid_argument("a table part holds " + std::to_string(p.values.size())
                                  + " values for " + std::to_string(p.keys.size())
                                  + " keys of rows of " + std::to_string(dim));
    for (std::size_t i = 0; i < p.keys.size(); ++i)
      all.emplace_back(p.keys[i], p.values.data() + i * dim);
  }
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  gathered_rows out;
  out.keys.reserve(all.size());
  out.values.reserve(all.size() * dim);
  for (const auto& [key, row] : all) {
    if (!out.keys.empty() && out.keys.back() == key)
      throw std::invalid_argument("key " + std::to_string(key) + " comes from two shards");
    out.keys.push_back(key);
    out.values.insert(out.values.end(), row, row + dim);
  }
  return out;
}

std::optional<ctr_kind> ctr_kind_of(const model_spec& model) {
  const auto plugin = plugin_name(model.name);
  if (plugin == "lr") return ctr_kind::lr;
  if (plugin == "dlrm") return ctr_kind::dlrm;
  return std::nullopt;
}

bool schema_shaped(const model_spec& model) {
  const auto kind = ctr_kind_of(model);
  if (!kind) return false;
  const auto shape = *kind == ctr_kind::lr ? lr_shape(model_args(model.name))
                                           : parse_dlrm_shape(model_args(model.name));
  return shape.dense_in != criteo_dense_fields || shape.fields != criteo_categorical_fields;
}

void set_ctr_schema(ctr_model& model, const std::string& schema, char delimiter) {
  auto input = std::make_shared<const feature_schema>(
    parse_feature_schema(schema, "the schema of " + model.name));
  if (input->dense_width != model.shape.dense_in || input->fields != model.shape.fields)
    throw std::invalid_argument("model " + model.name + ": its schema gives "
                                + std::to_string(input->dense_width) + " dense values and "
                                + std::to_string(input->fields) + " key fields, the model reads "
                                + std::to_string(model.shape.dense_in) + " and "
                                + std::to_string(model.shape.fields));
  model.schema = schema;
  model.delimiter = delimiter;
  model.field_tables = input->field_tables;
  model.mean_fields.clear();
  for (auto p : input->field_pooling) model.mean_fields.push_back(p == pooling::mean ? 1 : 0);
  model.input = std::move(input);
}

int ctr_tables(const ctr_model& model) {
  if (!model.shaped()) return model.shape.fields;
  return *std::max_element(model.field_tables.begin(), model.field_tables.end()) + 1;
}

ctr_model make_ctr_model(const model_spec& model, std::vector<float> dense,
                         const gathered_rows& table, const std::string& schema,
                         char delimiter) {
  const auto kind = ctr_kind_of(model);
  if (!kind) throw std::invalid_argument("model " + model.name + " is not a CTR model (lr, dlrm)");
  ctr_model out;
  out.kind = *kind;
  out.name = model.name;
  out.shape = *kind == ctr_kind::lr ? lr_shape(model_args(model.name))
                                    : parse_dlrm_shape(model_args(model.name));
  if (out.shape.dense_in != criteo_dense_fields
      || out.shape.fields != criteo_categorical_fields) {
    if (schema.empty())
      throw std::invalid_argument("model " + model.name + ": not on Criteo's 13 + 26 fields, "
                                  "and the schema it trained on is not given");
    set_ctr_schema(out, schema, delimiter);
  }
  const auto dim = static_cast<std::size_t>(out.dim());
  check_spec(model, out.tensor_slots(), static_cast<uint32_t>(dim));
  out.table = model.sparse_tables[0].name;
  if (dense.size() != model.total_floats())
    throw std::invalid_argument("model " + model.name + ": " + std::to_string(dense.size())
                                + " dense parameters, the spec has "
                                + std::to_string(model.total_floats()));
  if (!all_finite(dense.data(), dense.size()) || !all_finite(table.values.data(),
                                                             table.values.size()))
    throw std::invalid_argument("model " + model.name + ": a parameter is NaN or infinite");
  out.dense = std::move(dense);
  try {
    out.fields = split_fields(table, ctr_tables(out), dim);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("model " + model.name + ": " + e.what());
  }
  return out;
}

std::vector<ctr_field> split_fields(const gathered_rows& table, int fields, std::size_t dim) {
  if (table.values.size() != table.keys.size() * dim)
    throw std::invalid_argument("the table's " + std::to_string(table.values.size())
                                + " values are not rows of " + std::to_string(dim) + " for its "
                                + std::to_string(table.keys.size()) + " keys");
  std::vector<ctr_field> out(static_cast<std::size_t>(fields));
  for (auto& f : out) f.rows.assign(dim, 0.0f);  // row 0: the unknown key's
  for (std::size_t i = 0; i < table.keys.size(); ++i) {
    const uint64_t key = table.keys[i];
    if (i > 0 && key <= table.keys[i - 1])
      throw std::invalid_argument("the table's keys are not strictly ascending (key "
                                  + std::to_string(i) + ")");
    const int field = criteo_field_of(key);
    if (field >= fields)
      throw std::invalid_argument("key " + std::to_string(key) + " belongs to no field C1-C"
                                  + std::to_string(fields) + " (top byte "
                                  + std::to_string(field) + ")");
    auto& f = out[static_cast<std::size_t>(field)];
    f.keys.push_back(key);
    f.rows.insert(f.rows.end(), table.values.begin() + static_cast<std::ptrdiff_t>(i * dim),
                  table.values.begin() + static_cast<std::ptrdiff_t>((i + 1) * dim));
  }
  return out;
}

gathered_rows joined_rows(const ctr_model& model) {
  const auto dim = static_cast<std::size_t>(model.dim());
  gathered_rows out;
  for (const auto& f : model.fields) {  // field f's keys are below field f + 1's: ascending
    out.keys.insert(out.keys.end(), f.keys.begin(), f.keys.end());
    out.values.insert(out.values.end(), f.rows.begin() + dim, f.rows.end());
  }
  return out;
}

} // namespace actorps
