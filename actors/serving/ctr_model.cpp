#include "actors/serving/ctr_model.hpp"

#include "actors/ps/criteo_keys.hpp"
#include "actors/model/criteo_model.hpp"  // take_layout
#include "actors/model/dlrm_plugin.hpp"
#include "actors/model/wide_deep_plugin.hpp"
#include "kernels/optimizer.hpp"  // all_finite

#include <algorithm>
#include <iterator>
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

/// The sizes of a model of `kind` from its arguments; wdl's and deepfm's hidden widths go to
/// `hidden`.
dlrm_shape shape_of(ctr_kind kind, const std::string& args, std::vector<int>& hidden) {
  if (kind == ctr_kind::lr) return lr_shape(args);
  if (kind == ctr_kind::dlrm) return parse_dlrm_shape(args);
  const auto wd = parse_wide_deep_shape(args, kind == ctr_kind::deepfm);
  dlrm_shape shape;
  shape.dense_in = wd.dense_in;
  shape.fields = wd.fields;
  shape.dim = wd.dim;
  shape.bottom.clear();
  shape.top.clear();
  hidden = wd.hidden;
  return shape;
}

/// Throws unless `model`'s dense tensors are `slots` (names and shapes, in order) and its tables
/// have rows of `dims` floats (one table, or wdl's two).
void check_spec(const model_spec& model, const std::vector<tensor_slot>& slots,
                const std::vector<uint32_t>& dims) {
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
  bool fits = model.sparse_tables.size() == dims.size();
  for (std::size_t t = 0; fits && t < dims.size(); ++t)
    fits = model.sparse_tables[t].config.dim == dims[t];
  if (!fits)
    throw fail(dims.size() == 1 ? "expected one sparse table of rows of "
                                    + std::to_string(dims[0]) + " floats"
                                : "expected the sparse tables embeddings (rows of "
                                    + std::to_string(dims[0]) + " floats) and wide (1 float)");
  if (dims.size() == 2 && model.sparse_tables[1].name != ctr_wide_table)
    throw fail("its second table is " + model.sparse_tables[1].name + ", not wide");
}

} // namespace

const char* to_string(ctr_kind kind) {
  switch (kind) {
    case ctr_kind::lr: return "lr";
    case ctr_kind::dlrm: return "dlrm";
    case ctr_kind::wdl: return "wdl";
    case ctr_kind::deepfm: return "deepfm";
  }
  return "?";
}

uint32_t ctr_field::row_of(uint64_t key) const {
  const auto at = std::lower_bound(keys.begin(), keys.end(), key);
  if (at == keys.end() || *at != key) return 0;
  return static_cast<uint32_t>(at - keys.begin()) + 1;
}

wide_deep_shape ctr_model::wide_deep_sizes() const {
  wide_deep_shape out;
  out.dense_in = shape.dense_in;
  out.fields = shape.fields;
  out.dim = shape.dim;
  out.hidden = hidden;
  out.fm = kind == ctr_kind::deepfm;
  return out;
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
    const auto tensors = has_wide() ? wide_deep_tensors(wide_deep_sizes()) : dlrm_tensors(shape);
    for (auto& [name, dims] : tensors)
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
  if (plugin == "wdl") return ctr_kind::wdl;
  if (plugin == "deepfm") return ctr_kind::deepfm;
  return std::nullopt;
}

bool schema_shaped(const model_spec& model) {
  const auto kind = ctr_kind_of(model);
  if (!kind) return false;
  std::vector<int> hidden;
  const auto shape = shape_of(*kind, model_args(model.name), hidden);
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
  return make_ctr_model(model, std::move(dense), std::vector<gathered_rows>{table}, schema,
                        delimiter);
}

ctr_model make_ctr_model(const model_spec& model, std::vector<float> dense,
                         const std::vector<gathered_rows>& tables, const std::string& schema,
                         char delimiter) {
  const auto kind = ctr_kind_of(model);
  if (!kind)
    throw std::invalid_argument("model " + model.name
                                + " is not a CTR model (lr, dlrm, wdl, deepfm)");
  ctr_model out;
  out.kind = *kind;
  out.name = model.name;
  out.shape = shape_of(*kind, model_args(model.name), out.hidden);
  if (out.shape.dense_in != criteo_dense_fields
      || out.shape.fields != criteo_categorical_fields) {
    if (schema.empty())
      throw std::invalid_argument("model " + model.name + ": not on Criteo's 13 + 26 fields, "
                                  "and the schema it trained on is not given");
    set_ctr_schema(out, schema, delimiter);
  }
  const auto dim = static_cast<std::size_t>(out.dim());
  std::vector<uint32_t> dims{static_cast<uint32_t>(dim)};
  if (out.has_wide()) dims.push_back(1);
  check_spec(model, out.tensor_slots(), dims);
  if (tables.size() != dims.size())
    throw std::invalid_argument("model " + model.name + ": " + std::to_string(dims.size())
                                + " sparse tables, " + std::to_string(tables.size()) + " given");
  out.table = model.sparse_tables[0].name;
  if (dense.size() != model.total_floats())
    throw std::invalid_argument("model " + model.name + ": " + std::to_string(dense.size())
                                + " dense parameters, the spec has "
                                + std::to_string(model.total_floats()));
  bool finite = all_finite(dense.data(), dense.size());
  for (const auto& t : tables) finite = finite && all_finite(t.values.data(), t.values.size());
  if (!finite)
    throw std::invalid_argument("model " + model.name + ": a parameter is NaN or infinite");
  out.dense = std::move(dense);
  try {
    out.fields = split_fields(tables[0], ctr_tables(out), dim);
    if (out.has_wide()) out.wide = split_fields(tables[1], ctr_tables(out), 1);
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
  return joined_rows(model.fields, static_cast<std::size_t>(model.dim()));
}

gathered_rows joined_rows(const std::vector<ctr_field>& fields, std::size_t dim) {
  gathered_rows out;
  for (const auto& f : fields) {  // field f's keys are below field f + 1's: ascending
    out.keys.insert(out.keys.end(), f.keys.begin(), f.keys.end());
    out.values.insert(out.values.end(), f.rows.begin() + static_cast<std::ptrdiff_t>(dim),
                      f.rows.end());
  }
  return out;
}

std::vector<uint64_t> served_keys(const ctr_model& model, std::size_t f) {
  const auto& keys = model.fields[f].keys;
  if (!model.has_wide() || model.wide[f].keys == keys) return keys;
  std::vector<uint64_t> out;
  std::set_union(keys.begin(), keys.end(), model.wide[f].keys.begin(), model.wide[f].keys.end(),
                 std::back_inserter(out));
  return out;
}

std::vector<float> rows_along(const ctr_field& field, const std::vector<uint64_t>& keys,
                              std::size_t dim) {
  if (keys == field.keys) return field.rows;
  std::vector<float> out((keys.size() + 1) * dim, 0.0f);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto row = field.row_of(keys[i]);
    if (row == 0) continue;
    std::copy(field.rows.begin() + static_cast<std::ptrdiff_t>(row * dim),
              field.rows.begin() + static_cast<std::ptrdiff_t>((row + 1) * dim),
              out.begin() + static_cast<std::ptrdiff_t>((i + 1) * dim));
  }
  return out;
}

} // namespace actorps
