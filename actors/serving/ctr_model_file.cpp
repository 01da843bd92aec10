#include "actors/serving/ctr_model_file.hpp"

#include "actors/ps/criteo_keys.hpp"  // Criteo's field counts
#include "actors/serving/model_readers.hpp"
#include "kernels/optimizer.hpp"  // all_finite

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>
#include <stdexcept>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "keys and values are little-endian, copied in host order");

namespace actorps {

namespace {

constexpr const char* criteo_layout = "criteo";
constexpr const char* schema_layout = "schema";  // a log's, its schema recorded (CtrModel.schema)
constexpr uint32_t max_rows_width = 1u << 16;  // a dim or hidden width past this is refused

std::vector<uint32_t> widths(const std::vector<int>& w) { return {w.begin(), w.end()}; }

/// A table's rows as stored: keys ascending, dim floats each.
void write_table(exported::SparseTable::Builder out, const std::string& name,
                 const gathered_rows& table, std::size_t dim) {
  out.setName(name);
  out.setDim(static_cast<uint32_t>(dim));
  auto keys = out.initKeys(static_cast<unsigned>(table.keys.size() * sizeof(uint64_t)));
  if (!table.keys.empty()) std::memcpy(keys.begin(), table.keys.data(), keys.size());
  auto values = out.initValues(static_cast<unsigned>(table.values.size() * sizeof(float)));
  if (!table.values.empty()) std::memcpy(values.begin(), table.values.data(), values.size());
}

/// A stored table cut into `fields` field matrices of rows of `dim` floats, checked; throws
/// `fail`'s error.
template <class Fail>
std::vector<ctr_field> read_table(exported::SparseTable::Reader table, std::size_t dim,
                                  int fields, Fail&& fail) {
  const std::string name = table.getName().cStr();
  // Each Data read once: every read counts against the message's traversal limit.
  const auto keys = table.getKeys();
  const auto values = table.getValues();
  if (table.getDim() != dim || keys.size() % sizeof(uint64_t) != 0
      || values.size() != keys.size() / sizeof(uint64_t) * dim * sizeof(float))
    throw fail("table " + name + ": " + std::to_string(keys.size()) + " key bytes and "
               + std::to_string(values.size()) + " value bytes do not make rows of "
               + std::to_string(dim) + " floats");
  gathered_rows rows;
  rows.keys.resize(keys.size() / sizeof(uint64_t));
  rows.values.resize(values.size() / sizeof(float));
  if (!rows.keys.empty()) std::memcpy(rows.keys.data(), keys.begin(), keys.size());
  if (!rows.values.empty()) std::memcpy(rows.values.data(), values.begin(), values.size());
  if (!all_finite(rows.values.data(), rows.values.size()))
    throw fail("table " + name + " holds a NaN or infinite value");
  try {
    return split_fields(rows, fields, dim);
  } catch (const std::invalid_argument& e) {
    throw fail("table " + name + ": " + e.what());
  }
}

/// The sizes of a CtrModel, checked; throws `fail`'s error.
template <class Fail>
ctr_model read_sizes(exported::CtrModel::Reader ctr, Fail&& fail) {
  ctr_model model;
  using kind = exported::CtrModel::Kind;
  switch (ctr.getKind()) {
    case kind::LR: model.kind = ctr_kind::lr; break;
    case kind::DLRM: model.kind = ctr_kind::dlrm; break;
    case kind::WDL: model.kind = ctr_kind::wdl; break;
    case kind::DEEPFM: model.kind = ctr_kind::deepfm; break;
    default:
      throw fail("unknown CTR model kind " + std::to_string(static_cast<unsigned>(ctr.getKind())));
  }
  const std::string layout = ctr.getLayout().cStr();
  if (layout == schema_layout) {
    if (ctr.getDenseFeatures() == 0 || ctr.getFields() == 0
        || ctr.getDenseFeatures() > max_rows_width || ctr.getFields() > max_rows_width)
      throw fail("a schema's model of " + std::to_string(ctr.getDenseFeatures()) + " dense values "
                 "and " + std::to_string(ctr.getFields()) + " key fields");
    model.shape.dense_in = static_cast<int>(ctr.getDenseFeatures());
    model.shape.fields = static_cast<int>(ctr.getFields());
  } else if (layout != criteo_layout) {
    throw fail("input layout '" + layout + "', this actorps reads '" + criteo_layout
               + "' (label, I1-I13, C1-C26) and '" + schema_layout + "'");
  } else if (ctr.getDenseFeatures() != criteo_dense_fields
             || ctr.getFields() != criteo_categorical_fields) {
    throw fail(std::to_string(ctr.getDenseFeatures()) + " integer and "
               + std::to_string(ctr.getFields()) + " categorical fields, Criteo's layout has 13 "
               "and 26");
  }
  auto hidden = [&](capnp::List<uint32_t>::Reader list) {
    std::vector<int> out;
    for (auto w : list) {
      if (w == 0 || w > max_rows_width)
        throw fail("hidden width " + std::to_string(w) + " out of range");
      out.push_back(static_cast<int>(w));
    }
    return out;
  };
  const uint32_t dim = ctr.getDim();
  if (dim == 0 || dim > max_rows_width)
    throw fail("row width " + std::to_string(dim) + " out of range");
  model.shape.dim = static_cast<int>(dim);
  model.shape.bottom = hidden(ctr.getBottom());
  model.shape.top = hidden(ctr.getTop());
  model.hidden = hidden(ctr.getHidden());
  const bool mlp = !model.shape.bottom.empty() || !model.shape.top.empty();
  if (model.kind == ctr_kind::lr && (dim != 1 || mlp))
    throw fail("an lr model has rows of 1 float and no MLP");
  if (model.has_wide() ? mlp : !model.hidden.empty())
    throw fail(std::string("a ") + to_string(model.kind) + " model has "
               + (model.has_wide() ? "no bottom or top MLP" : "no deep MLP"));
  return model;
}

} // namespace

std::string encode_ctr_model(const ctr_model& model) {
  const auto slots = model.tensor_slots();
  const auto dim = static_cast<std::size_t>(model.dim());
  if (model.dense.size() != slots.back().offset + slots.back().size
      || model.fields.size() != static_cast<std::size_t>(ctr_tables(model))
      || model.wide.size() != (model.has_wide() ? model.fields.size() : 0))
    throw std::invalid_argument("encode_ctr_model: the parameters do not fit " + model.name);
  for (const auto& f : model.fields)
    if (f.rows.size() != (f.keys.size() + 1) * dim)
      throw std::invalid_argument("encode_ctr_model: a field's rows do not fit its keys");
  for (const auto& f : model.wide)
    if (f.rows.size() != f.keys.size() + 1)
      throw std::invalid_argument("encode_ctr_model: a field's wide weights do not fit its keys");
  const auto table = joined_rows(model);
  const auto wide = joined_rows(model.wide, 1);
  capnp::MallocMessageBuilder builder(
    static_cast<unsigned>((model.dense.size() + table.values.size() + wide.values.size()) / 2
                          + table.keys.size() + wide.keys.size() + 64 * slots.size() + 256));
  auto root = builder.initRoot<exported::ExportedModel>();
  root.setFormatVersion(ctr_format_version);
  root.setModel(model.name);
  auto ctr = root.initCtr();
  using kind = exported::CtrModel::Kind;
  ctr.setKind(model.kind == ctr_kind::lr     ? kind::LR
              : model.kind == ctr_kind::dlrm ? kind::DLRM
              : model.kind == ctr_kind::wdl  ? kind::WDL
                                             : kind::DEEPFM);
  ctr.setLayout(model.shaped() ? schema_layout : criteo_layout);
  if (model.shaped()) {
    ctr.setSchema(model.schema);
    ctr.setDelimiter(std::string(1, model.delimiter));
    auto tables = ctr.initFieldTables(static_cast<unsigned>(model.field_tables.size()));
    for (unsigned f = 0; f < tables.size(); ++f)
      tables.set(f, static_cast<uint8_t>(model.field_tables[f]));
    auto mean = ctr.initMeanPooling(static_cast<unsigned>(model.mean_fields.size()));
    for (unsigned f = 0; f < mean.size(); ++f) mean.set(f, model.mean_fields[f] != 0);
  }
  ctr.setDenseFeatures(static_cast<uint32_t>(model.shape.dense_in));
  ctr.setFields(static_cast<uint32_t>(model.shape.fields));
  ctr.setDim(static_cast<uint32_t>(dim));
  const bool dlrm = model.kind == ctr_kind::dlrm;
  const auto bottom = widths(dlrm ? model.shape.bottom : std::vector<int>{});
  const auto top = widths(dlrm ? model.shape.top : std::vector<int>{});
  auto b = ctr.initBottom(static_cast<unsigned>(bottom.size()));
  for (unsigned i = 0; i < bottom.size(); ++i) b.set(i, bottom[i]);
  auto t = ctr.initTop(static_cast<unsigned>(top.size()));
  for (unsigned i = 0; i < top.size(); ++i) t.set(i, top[i]);
  const auto hidden = widths(model.has_wide() ? model.hidden : std::vector<int>{});
  auto h = ctr.initHidden(static_cast<unsigned>(hidden.size()));
  for (unsigned i = 0; i < hidden.size(); ++i) h.set(i, hidden[i]);
  auto tensors = root.initTensors(static_cast<unsigned>(slots.size()));
  for (unsigned i = 0; i < slots.size(); ++i) {
    tensors[i].setName(slots[i].name);
    auto shape = tensors[i].initShape(static_cast<unsigned>(slots[i].shape.size()));
    for (unsigned d = 0; d < slots[i].shape.size(); ++d)
      shape.set(d, static_cast<uint32_t>(slots[i].shape[d]));
    auto values = tensors[i].initValues(static_cast<unsigned>(slots[i].size * sizeof(float)));
    std::memcpy(values.begin(), model.dense.data() + slots[i].offset, values.size());
  }
  auto out = root.initSparseTables(model.has_wide() ? 2 : 1);
  write_table(out[0], model.table, table, dim);
  if (model.has_wide()) write_table(out[1], ctr_wide_table, wide, 1);
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

ctr_model read_ctr_model(exported::ExportedModel::Reader root, const std::string& origin) {
  auto fail = [&](const std::string& what) { return model_file_error(origin + ": " + what); };
  if (!root.hasCtr()) throw fail("format 2 (a CTR model) without its CtrModel");
  ctr_model model = read_sizes(root.getCtr(), fail);
  model.name = root.getModel().cStr();
  if (std::string(root.getCtr().getLayout().cStr()) == schema_layout) {
    auto ctr = root.getCtr();
    const std::string delimiter = ctr.getDelimiter().cStr();
    if (delimiter != "\t" && delimiter != ",")
      throw fail("the delimiter of a schema's lines is TAB or ',', not '" + delimiter + "'");
    try {
      set_ctr_schema(model, ctr.getSchema().cStr(), delimiter[0]);
    } catch (const std::exception& e) {  // schema_error or a shape that does not fit
      throw fail(e.what());
    }
    std::vector<int> tables;
    for (auto t : ctr.getFieldTables()) tables.push_back(t);
    std::vector<uint8_t> mean;
    for (bool m : ctr.getMeanPooling()) mean.push_back(m ? 1 : 0);
    if (tables != model.field_tables || mean != model.mean_fields)
      throw fail("the key fields' tables or pooling are not those of the recorded schema");
  }
  const auto dim = static_cast<std::size_t>(model.dim());
  const auto slots = model.tensor_slots();
  auto tensors = root.getTensors();
  if (tensors.size() != slots.size())
    throw fail("the " + model.name + " model needs " + std::to_string(slots.size())
               + " tensors, the file has " + std::to_string(tensors.size()));
  model.dense.resize(slots.back().offset + slots.back().size);  // sizes from the header: small
  for (std::size_t i = 0; i < slots.size(); ++i) {
    auto tensor = tensors[static_cast<unsigned>(i)];
    std::vector<std::size_t> shape;
    for (auto d : tensor.getShape()) shape.push_back(d);
    const auto values = tensor.getValues();
    if (std::string(tensor.getName().cStr()) != slots[i].name || shape != slots[i].shape
        || values.size() != slots[i].size * sizeof(float))
      throw fail("tensor " + std::to_string(i) + " is '" + tensor.getName().cStr() + "' "
                 + shape_text(shape) + " with " + std::to_string(values.size())
                 + " bytes, " + model.name + " needs " + slots[i].name + " "
                 + shape_text(slots[i].shape));
    std::memcpy(model.dense.data() + slots[i].offset, values.begin(), values.size());
  }
  if (!all_finite(model.dense.data(), model.dense.size()))
    throw fail("a dense tensor holds a NaN or infinite value");

  auto tables = root.getSparseTables();
  const unsigned expected = model.has_wide() ? 2 : 1;
  if (tables.size() != expected)
    throw fail(std::to_string(tables.size()) + " sparse tables, expected "
               + std::to_string(expected));
  model.table = tables[0].getName().cStr();
  model.fields = read_table(tables[0], dim, ctr_tables(model), fail);
  if (model.has_wide()) {
    if (std::string(tables[1].getName().cStr()) != ctr_wide_table)
      throw fail("the second table is '" + std::string(tables[1].getName().cStr())
                 + "', expected '" + ctr_wide_table + "'");
    model.wide = read_table(tables[1], 1, ctr_tables(model), fail);
  }
  return model;
}

} // namespace actorps
