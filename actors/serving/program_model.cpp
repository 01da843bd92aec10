#include "actors/serving/program_model.hpp"

#include "actors/serving/exported_model.hpp"
#include "actors/serving/model_readers.hpp"
#include "actors/serving/served_model.hpp"
#include "kernels/optimizer.hpp"  // all_finite

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "keys and values are little-endian, copied in host order");

namespace actorps {

program_model make_program_model(const model_spec& spec, const std::vector<float>& dense,
                                 const std::vector<gathered_rows>& tables) {
  if (dense.size() != spec.total_floats())
    throw std::invalid_argument("export: " + std::to_string(dense.size()) + " dense values, " +
                                spec.name + " has " + std::to_string(spec.total_floats()));
  if (tables.size() != spec.sparse_tables.size())
    throw std::invalid_argument("export: " + std::to_string(tables.size()) + " tables, " +
                                spec.name + " has " + std::to_string(spec.sparse_tables.size()));
  program_model out;
  out.name = spec.name;
  std::size_t offset = 0;
  for (const auto& t : spec.tensors) {
    out.tensors.push_back({t.name, t.shape,
                           {dense.begin() + long(offset), dense.begin() + long(offset + t.size())}});
    offset += t.size();
  }
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const auto& s = spec.sparse_tables[i];
    auto merged = merge_rows({tables[i]}, s.config.dim);  // ascending, each key once
    out.tables.push_back({s.name, s.config.dim, std::move(merged.keys), std::move(merged.values)});
  }
  return out;
}

std::string encode_program_model(const program_model& model) {
  std::size_t words = 64;
  for (const auto& t : model.tensors) words += t.values.size() / 2 + 16;
  for (const auto& t : model.tables) words += t.keys.size() + t.values.size() / 2 + 16;
  capnp::MallocMessageBuilder builder(static_cast<unsigned>(words));
  auto root = builder.initRoot<exported::ExportedModel>();
  root.setFormatVersion(program_format_version);
  root.setModel(model.name);
  auto tensors = root.initTensors(static_cast<unsigned>(model.tensors.size()));
  for (unsigned i = 0; i < model.tensors.size(); ++i) {
    const auto& t = model.tensors[i];
    tensors[i].setName(t.name);
    auto shape = tensors[i].initShape(static_cast<unsigned>(t.shape.size()));
    for (unsigned d = 0; d < t.shape.size(); ++d) shape.set(d, t.shape[d]);
    auto values = tensors[i].initValues(static_cast<unsigned>(t.values.size() * sizeof(float)));
    if (!t.values.empty()) std::memcpy(values.begin(), t.values.data(), values.size());
  }
  auto tables = root.initSparseTables(static_cast<unsigned>(model.tables.size()));
  for (unsigned i = 0; i < model.tables.size(); ++i) {
    const auto& t = model.tables[i];
    tables[i].setName(t.name);
    tables[i].setDim(t.dim);
    auto keys = tables[i].initKeys(static_cast<unsigned>(t.keys.size() * sizeof(uint64_t)));
    if (!t.keys.empty()) std::memcpy(keys.begin(), t.keys.data(), keys.size());
    auto values = tables[i].initValues(static_cast<unsigned>(t.values.size() * sizeof(float)));
    if (!t.values.empty()) std::memcpy(values.begin(), t.values.data(), values.size());
  }
  auto flat = capnp::messageToFlatArray(builder);
  auto bytes = flat.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

namespace {

program_model read_program(exported::ExportedModel::Reader root, const std::string& origin) {
  auto fail = [&](const std::string& what) { return model_file_error(origin + ": " + what); };
  if (root.getFormatVersion() != program_format_version)
    throw fail("format version " + std::to_string(root.getFormatVersion()) +
               ", a program's model is format 3");
  program_model model;
  model.name = root.getModel().cStr();
  for (auto tensor : root.getTensors()) {
    program_tensor t;
    t.name = tensor.getName().cStr();
    std::size_t size = 1;
    for (auto d : tensor.getShape()) {
      t.shape.push_back(d);
      size *= d;
    }
    const auto values = tensor.getValues();
    if (values.size() != size * sizeof(float))
      throw fail("tensor '" + t.name + "' has " + std::to_string(values.size()) +
                 " bytes, its shape needs " + std::to_string(size * sizeof(float)));
    t.values.resize(size);
    if (size > 0) std::memcpy(t.values.data(), values.begin(), values.size());
    if (!all_finite(t.values.data(), t.values.size()))
      throw fail("tensor '" + t.name + "' holds a NaN or infinite value");
    model.tensors.push_back(std::move(t));
  }
  for (auto table : root.getSparseTables()) {
    program_table t;
    t.name = table.getName().cStr();
    t.dim = table.getDim();
    const auto keys = table.getKeys();
    const auto values = table.getValues();
    if (t.dim == 0 || keys.size() % sizeof(uint64_t) != 0 ||
        values.size() != keys.size() / sizeof(uint64_t) * t.dim * sizeof(float))
      throw fail("table '" + t.name + "': " + std::to_string(keys.size()) + " key bytes and " +
                 std::to_string(values.size()) + " value bytes do not fit dim " +
                 std::to_string(t.dim));
    t.keys.resize(keys.size() / sizeof(uint64_t));
    t.values.resize(values.size() / sizeof(float));
    if (!t.keys.empty()) std::memcpy(t.keys.data(), keys.begin(), keys.size());
    if (!t.values.empty()) std::memcpy(t.values.data(), values.begin(), values.size());
    for (std::size_t k = 1; k < t.keys.size(); ++k)
      if (t.keys[k] <= t.keys[k - 1])
        throw fail("table '" + t.name + "': keys not strictly ascending at row " +
                   std::to_string(k));
    if (!all_finite(t.values.data(), t.values.size()))
      throw fail("table '" + t.name + "' holds a NaN or infinite value");
    model.tables.push_back(std::move(t));
  }
  return model;
}

} // namespace

program_model decode_program_model(const std::string& bytes, const std::string& origin) {
  program_model model;
  read_model_root(bytes, origin, [&](exported::ExportedModel::Reader root) {
    model = read_program(root, origin);
  });
  return model;
}

export_result export_program_model(const train_spec& spec, const trained_parameters& params,
                                   const run_info& run, const std::string& dir) {
  const auto start = std::chrono::steady_clock::now();
  const auto model = make_program_model(spec.model, params.dense, params.tables);
  const auto capnp = encode_program_model(model);
  decode_program_model(capnp, model_capnp_name);  // what a reader will check, checked now
  const auto metadata = with_checksums(
    make_program_export_metadata(spec, model, run, std::chrono::system_clock::now()),
    {{model_capnp_name, &capnp}});
  return write_model_version(dir, model_capnp_name, capnp, metadata, start);
}

program_model read_program_version(const std::string& dir) {
  return decode_program_model(read_checked_model(dir), dir + "/" + model_capnp_name);
}

} // namespace actorps
