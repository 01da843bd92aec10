#include "actors/serving/served_model.hpp"

#include "actors/protocol/digest.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/serving/export_chain.hpp"
#include "actors/serving/export_metadata.hpp"
#include "actors/serving/file_bytes.hpp"
#include "actors/serving/model_readers.hpp"
#include "actors/serving/program_model.hpp"
#include "actors/serving/versioned_dir.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

namespace actorps {

namespace {

/// The reader of the root's format.
served_model read_root(exported::ExportedModel::Reader root, const std::string& origin) {
  switch (root.getFormatVersion()) {
    case mlp_format_version: return read_mlp_model(root, origin);
    case ctr_format_version: return read_ctr_model(root, origin);
    case program_format_version:
      throw model_file_error(origin + ": " + std::string(root.getModel().cStr()) + " is exported "
                             "as its tensors and rows only (format 3): actorps serves MLPs, lr, "
                             "dlrm, wdl and deepfm; the program that trained it serves this one "
                             "(actorps.torch.load_export)");
    default:
      throw model_file_error(origin + ": format version " + std::to_string(root.getFormatVersion())
                             + ", this actorps reads " + std::to_string(mlp_format_version)
                             + " (MLP) and " + std::to_string(ctr_format_version)
                             + " (CTR) (not an actorps model, or a newer one)");
  }
}

} // namespace

void read_model_root(const std::string& bytes, const std::string& origin,
                     const std::function<void(exported::ExportedModel::Reader)>& read) {
  if (bytes.empty()) throw model_file_error(origin + ": empty file, not a model");
  if (bytes.size() % sizeof(capnp::word) != 0)
    throw model_file_error(origin + ": truncated or not a Cap'n Proto message ("
                           + std::to_string(bytes.size()) + " bytes, not whole 8-byte words)");
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = 4 * words.size() + 1024;  // a full read touches each once
    capnp::FlatArrayMessageReader reader(words, options);
    if (reader.getEnd() != words.end())
      throw model_file_error(origin + ": bytes after the end of the message (not a model.capnp)");
    read(reader.getRoot<exported::ExportedModel>());
  } catch (const kj::Exception& e) {
    throw model_file_error(origin + ": truncated or not a model.capnp (Cap'n Proto: "
                           + e.getDescription().cStr() + ")");
  }
}

served_model decode_served_model(const std::string& bytes, const std::string& origin) {
  std::optional<served_model> model;
  read_model_root(bytes, origin, [&](exported::ExportedModel::Reader root) {
    model.emplace(read_root(root, origin));
  });
  return std::move(*model);
}

served_model read_served_model(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file_bytes(path);
  } catch (const file_read_error& e) {
    throw model_file_error(e.what());
  }
  return decode_served_model(bytes, path);
}

void check_parameter_bound(const served_model& model, float bound, const std::string& origin) {
  auto check = [&](const float* values, std::size_t n, const std::string& what) {
    if (auto at = first_outside(values, n, bound))
      throw model_file_error(origin + ": " + what + " value " + value_text(values[*at])
                             + (std::isfinite(values[*at]) ? " is beyond the bound "
                                                               + value_text(bound)
                                                           : std::string(" is not finite"))
                             + " (--max-parameter; corrupt, or not a trained model)");
  };
  if (const auto* mlp = std::get_if<exported_model>(&model)) {
    for (const auto& slot : tensor_slots(mlp->layers))
      check(mlp->parameters.data() + slot.offset, slot.size, "tensor " + slot.name);
    return;
  }
  const auto& ctr = std::get<ctr_model>(model);
  for (const auto& slot : ctr.tensor_slots())
    check(ctr.dense.data() + slot.offset, slot.size, "tensor " + slot.name);
  for (std::size_t f = 0; f < ctr.fields.size(); ++f)
    check(ctr.fields[f].rows.data(), ctr.fields[f].rows.size(),
          "table " + ctr.table + " field C" + std::to_string(f + 1));
  for (std::size_t f = 0; f < ctr.wide.size(); ++f)
    check(ctr.wide[f].rows.data(), ctr.wide[f].rows.size(),
          std::string("table ") + ctr_wide_table + " field C" + std::to_string(f + 1));
}

std::string read_checked_model(const std::string& dir) {
  const std::string path = dir + "/" + model_capnp_name;
  // metadata.json first: it is small, and holds the digest model.capnp must have
  const std::string meta_path = dir + "/" + metadata_json_name;
  std::string meta, bytes;
  std::string expected;
  try {
    meta = read_file_bytes(meta_path, max_metadata_bytes);
    expected = recorded_sha256(meta, model_capnp_name);
  } catch (const file_read_error& e) {
    throw model_file_error(std::string(e.what()) + " (an export's metadata.json holds the "
                           "checksum model.capnp is checked against)");
  } catch (const std::invalid_argument& e) {
    throw model_file_error(meta_path + ": " + e.what());
  }
  if (expected.empty())
    throw model_file_error(meta_path + ": records no SHA-256 of model.capnp, so the model cannot "
                           "be checked (an export of an older actorps: export it again)");
  try {
    bytes = read_file_bytes(path, max_wire_bytes);
  } catch (const file_read_error& e) {
    throw model_file_error(e.what());
  }
  const auto actual = sha256_hex(bytes);
  if (!same_digest(actual, expected))
    throw model_file_error(path + ": SHA-256 " + actual + " differs from " + expected
                           + ", metadata.json's (corrupt, or changed after the export)");
  return bytes;
}

served_model load_served_model(const std::string& dir, float max_parameter) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw model_file_error(dir + ": not a directory (give an export version, DIR/<version>)");
  const std::string path = dir + "/" + model_capnp_name;
  if (!std::filesystem::exists(path, ec)) {
    if (latest_version(dir) == 0 && !std::filesystem::exists(dir + "/" + delta_capnp_name, ec))
      throw model_file_error(path + ": missing (not an export version directory)");
    // An export directory, or a delta version in one: the newest complete chain, folded.
    auto chain = load_export_chain(dir, max_parameter);
    for (const auto& why : chain.skipped)
      std::fprintf(stderr, "actorps: skipping %s\n", why.c_str());
    return std::move(chain.model);
  }
  const auto bytes = read_checked_model(dir);
  auto model = decode_served_model(bytes, path);
  check_parameter_bound(model, max_parameter, path);
  return model;
}

exported_model as_mlp(served_model model, const std::string& origin) {
  if (auto* ctr = std::get_if<ctr_model>(&model))
    throw model_file_error(origin + ": a CTR model (" + ctr->name + "), not an MLP");
  return std::get<exported_model>(std::move(model));
}

} // namespace actorps
