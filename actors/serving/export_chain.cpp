#include "actors/serving/export_chain.hpp"

#include "actors/protocol/digest.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/serving/ctr_model_file.hpp"
#include "actors/serving/export_metadata.hpp"
#include "actors/serving/file_bytes.hpp"
#include "actors/serving/model_export.hpp"
#include "actors/serving/model_readers.hpp"
#include "actors/serving/versioned_dir.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <tuple>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace actorps {

namespace {

using json = nlohmann::ordered_json;

/// A version that cannot be read (a file missing, unreadable or not what its checksum says):
/// skipped by a reader, with what() saying why.
struct damaged_version : model_file_error {
  using model_file_error::model_file_error;
};

json link_json(uint64_t version, int64_t clock, const std::string& sha256) {
  return {{"version", version}, {"clock", clock}, {"sha256", sha256}};
}

/// The words of `bytes`, copied to 8-byte alignment for Cap'n Proto.
kj::Array<capnp::word> words_of(const std::string& bytes) {
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), words.size() * sizeof(capnp::word));
  return words;
}

struct ctr_delta {
  ctr_model changed;
  std::vector<uint64_t> removed, removed_wide;  // the tables' tombstones: the first's, "wide"'s
};

/// Little-endian uint64 keys, strictly ascending; throws damaged_version.
std::vector<uint64_t> read_removed(capnp::Data::Reader removed, const std::string& origin) {
  if (removed.size() % sizeof(uint64_t) != 0)
    throw damaged_version(origin + ": removed keys are not whole 8-byte keys");
  std::vector<uint64_t> out(removed.size() / sizeof(uint64_t));
  if (!out.empty()) std::memcpy(out.data(), removed.begin(), removed.size());
  for (std::size_t i = 1; i < out.size(); ++i)
    if (out[i] <= out[i - 1])
      throw damaged_version(origin + ": removed keys are not strictly ascending");
  return out;
}

ctr_delta decode_ctr_delta(const std::string& bytes, const std::string& origin) {
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0)
    throw damaged_version(origin + ": truncated or not a delta.capnp (" + std::to_string(bytes.size())
                          + " bytes, not whole 8-byte words)");
  const auto words = words_of(bytes);
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = 4 * words.size() + 1024;
    capnp::FlatArrayMessageReader reader(words, options);
    auto root = reader.getRoot<exported::ExportDelta>();
    if (!root.hasModel() || root.getModel().getFormatVersion() != ctr_format_version)
      throw damaged_version(origin + ": no CTR model in the delta");
    ctr_delta out;
    out.changed = read_ctr_model(root.getModel(), origin);
    out.removed = read_removed(root.getRemovedKeys(), origin);
    out.removed_wide = read_removed(root.getRemovedWideKeys(), origin);
    if (!out.changed.has_wide() && !out.removed_wide.empty())
      throw damaged_version(origin + ": removed wide keys for a model without the table wide");
    return out;
  } catch (const kj::Exception& e) {
    throw damaged_version(origin + ": truncated or not a delta.capnp (Cap'n Proto: "
                          + e.getDescription().cStr() + ")");
  } catch (const damaged_version&) {
    throw;
  } catch (const model_file_error& e) {
    throw damaged_version(e.what());
  }
}

/// One version's metadata.json, parsed, and its "chain" (a full one when there is none: a
/// version written before chains, or after a run).
struct version_meta {
  std::string text;
  chain_position chain;
};

int64_t int_at(const json& j, const char* key, const std::string& origin) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer())
    throw damaged_version(origin + ": \"" + key + "\" missing or not an integer");
  return it->get<int64_t>();
}

std::string text_at(const json& j, const char* key, const std::string& origin) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    throw damaged_version(origin + ": \"" + key + "\" missing or not a string");
  return it->get<std::string>();
}

version_meta read_meta(const std::string& dir) {
  const auto path = dir + "/" + metadata_json_name;
  version_meta out;
  try {
    out.text = read_file_bytes(path, max_metadata_bytes);
  } catch (const file_read_error& e) {
    throw damaged_version(e.what());
  }
  json meta;
  try {
    meta = json::parse(out.text);
  } catch (const json::exception& e) {
    throw damaged_version(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!meta.is_object()) throw damaged_version(path + ": not a JSON object");
  auto chain = meta.find("chain");
  if (chain == meta.end()) return out;
  if (!chain->is_object()) throw damaged_version(path + ": \"chain\" is not an object");
  const auto kind = text_at(*chain, "kind", path);
  if (kind != "full" && kind != "delta")
    throw damaged_version(path + ": chain kind '" + kind + "', neither full nor delta");
  out.chain.clock = int_at(*chain, "clock", path);
  out.chain.delta = kind == "delta";
  if (!out.chain.delta) return out;
  for (auto [key, version, clock, sha] :
       {std::tuple{"base", &out.chain.base_version, &out.chain.base_clock, &out.chain.base_sha256},
        std::tuple{"predecessor", &out.chain.predecessor_version, &out.chain.predecessor_clock,
                   &out.chain.predecessor_sha256}}) {
    auto link = chain->find(key);
    if (link == chain->end() || !link->is_object())
      throw damaged_version(path + ": a delta without its \"" + key + "\"");
    const auto v = int_at(*link, "version", path);
    if (v <= 0) throw damaged_version(path + ": " + key + " version " + std::to_string(v));
    *version = static_cast<uint64_t>(v);
    *clock = int_at(*link, "clock", path);
    *sha = text_at(*link, "sha256", path);
  }
  return out;
}

/// Reads `dir`/`name` and checks it against the SHA-256 `meta` records for it.
std::string checked_file(const std::string& dir, const version_meta& meta,
                         const std::string& name) {
  const auto path = dir + "/" + name;
  std::string expected;
  try {
    expected = recorded_sha256(meta.text, name);
  } catch (const std::invalid_argument& e) {
    throw damaged_version(dir + "/" + metadata_json_name + ": " + e.what());
  }
  if (expected.empty())
    throw damaged_version(dir + "/" + metadata_json_name + ": records no SHA-256 of " + name);
  std::string bytes;
  try {
    bytes = read_file_bytes(path, max_wire_bytes);
  } catch (const file_read_error& e) {
    throw damaged_version(e.what());
  }
  const auto actual = sha256_hex(bytes);
  if (!same_digest(actual, expected))
    throw damaged_version(path + ": SHA-256 " + actual + " differs from " + expected
                          + ", metadata.json's (damaged, or written partly)");
  return bytes;
}

std::string version_dir(const std::string& root, uint64_t v) {
  return root + "/" + std::to_string(v);
}

/// The chain ending at version `newest` of `root`, folded.
loaded_chain chain_ending_at(const std::string& root, uint64_t newest, float max_parameter) {
  std::error_code ec;
  // Back from the newest to the base: each link's metadata, checked to name an older one.
  std::vector<std::pair<uint64_t, version_meta>> links;  // newest first
  uint64_t v = newest;
  for (;;) {
    const auto dir = version_dir(root, v);
    if (!std::filesystem::is_directory(dir, ec)) {
      const auto& next = links.back();
      throw export_chain_error(version_dir(root, next.first) + " builds on " + dir + " (clock "
                               + std::to_string(next.second.chain.predecessor_clock)
                               + "), which is missing: a gap in the chain");
    }
    auto meta = read_meta(dir);
    if (!links.empty()) {  // the link before the one just read: what it names must be this
      const auto& next = links.back();
      const auto& want = next.second.chain;
      const auto& got = meta.chain;
      if (got.clock >= 0 && got.clock != want.predecessor_clock)
        throw export_chain_error(version_dir(root, next.first) + " builds on " + dir + " at clock "
                                 + std::to_string(want.predecessor_clock) + ", which holds clock "
                                 + std::to_string(got.clock) + ": another chain's version");
    }
    const bool delta = meta.chain.delta;
    const auto predecessor = meta.chain.predecessor_version;
    links.emplace_back(v, std::move(meta));
    if (!delta) break;
    if (predecessor >= v)
      throw damaged_version(dir + ": builds on version " + std::to_string(predecessor)
                            + ", not an older one");
    v = predecessor;
  }
  std::reverse(links.begin(), links.end());  // base first
  const auto& [base_version, base_meta] = links.front();
  const auto base_dir = version_dir(root, base_version);
  loaded_chain out;
  out.base_version = base_version;
  out.base_metadata = base_meta.text;
  // The base: model.capnp checked against its metadata.json, as any full version is served.
  if (!std::filesystem::exists(base_dir + "/" + model_capnp_name, ec))
    throw damaged_version(base_dir + "/" + model_capnp_name + ": missing");
  try {
    out.model = load_served_model(base_dir, max_parameter);
  } catch (const model_file_error& e) {
    throw damaged_version(e.what());
  }
  const auto base_sha = recorded_sha256(base_meta.text, model_capnp_name);
  std::string previous_sha = base_sha;
  int64_t previous_clock = base_meta.chain.clock;
  if (links.size() > 1) {
    auto* model = std::get_if<ctr_model>(&out.model);
    if (!model)
      throw export_chain_error(version_dir(root, links[1].first) + " is a delta of " + base_dir
                               + ", which holds an MLP: only CTR models have delta versions");
    const auto dim = static_cast<std::size_t>(model->dim());
    auto table = joined_rows(*model);
    auto wide = joined_rows(model->wide, 1);
    for (std::size_t i = 1; i < links.size(); ++i) {
      const auto dir = version_dir(root, links[i].first);
      const auto& pos = links[i].second.chain;
      const auto& before = version_dir(root, links[i - 1].first);
      if (pos.base_version != base_version || !same_digest(pos.base_sha256, base_sha))
        throw export_chain_error(dir + " names base version " + std::to_string(pos.base_version)
                                 + ", its chain leads to " + base_dir
                                 + ", whose model.capnp is another: a delta of another base");
      if (!same_digest(pos.predecessor_sha256, previous_sha))
        throw export_chain_error(dir + " builds on " + before + " with SHA-256 "
                                 + pos.predecessor_sha256 + ", " + before + " holds "
                                 + previous_sha + ": another chain's version, or rewritten");
      if (pos.clock <= pos.predecessor_clock)
        throw export_chain_error(dir + " holds clock " + std::to_string(pos.clock)
                                 + ", not after its predecessor " + before + "'s clock "
                                 + std::to_string(pos.predecessor_clock)
                                 + ": a duplicate, or out of order");
      if (previous_clock >= 0 && pos.predecessor_clock != previous_clock)
        throw export_chain_error(dir + " builds on clock " + std::to_string(pos.predecessor_clock)
                                 + ", " + before + " holds clock "
                                 + std::to_string(previous_clock));
      const auto bytes = checked_file(dir, links[i].second, delta_capnp_name);
      auto delta = decode_ctr_delta(bytes, dir + "/" + delta_capnp_name);
      if (delta.changed.name != model->name || delta.changed.table != model->table
          || delta.changed.dim() != model->dim())
        throw export_chain_error(dir + ": a delta of " + delta.changed.name + ", " + base_dir
                                 + " holds " + model->name);
      row_changes changes{joined_rows(delta.changed), std::move(delta.removed)};
      table = apply_changes(table, changes, dim);
      if (model->has_wide())
        wide = apply_changes(wide, {joined_rows(delta.changed.wide, 1),
                                    std::move(delta.removed_wide)}, 1);
      model->dense = std::move(delta.changed.dense);
      previous_sha = sha256_hex(bytes);
      previous_clock = pos.clock;
    }
    try {
      model->fields = split_fields(table, ctr_tables(*model), dim);
      if (model->has_wide()) model->wide = split_fields(wide, ctr_tables(*model), 1);
    } catch (const std::invalid_argument& e) {
      throw damaged_version(version_dir(root, newest) + ": its chain folds to a bad table: "
                            + e.what());
    }
    try {
      check_parameter_bound(out.model, max_parameter, version_dir(root, newest));
    } catch (const model_file_error& e) {
      throw damaged_version(e.what());
    }
  }
  out.path = version_dir(root, newest);
  out.version = newest;
  out.clock = links.back().second.chain.clock;
  out.deltas = links.size() - 1;
  return out;
}

/// The numbered versions in root, newest first, up to `newest`.
std::vector<uint64_t> versions_of(const std::string& root, uint64_t newest) {
  std::vector<uint64_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.size() > 18 || name[0] == '0'
        || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const auto v = std::stoull(name);
    if (v <= newest && entry.is_directory(ec)) out.push_back(v);
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

} // namespace

std::string chain_json(const chain_position& p) {
  json out = {{"kind", p.delta ? "delta" : "full"}, {"clock", p.clock}};
  if (p.delta) {
    out["base"] = link_json(p.base_version, p.base_clock, p.base_sha256);
    out["predecessor"] = link_json(p.predecessor_version, p.predecessor_clock,
                                   p.predecessor_sha256);
  }
  return out.dump();
}

row_changes diff_rows(const gathered_rows& before, const gathered_rows& after, std::size_t dim) {
  row_changes out;
  std::size_t i = 0, j = 0;
  auto take = [&](std::size_t k) {
    out.rows.keys.push_back(after.keys[k]);
    out.rows.values.insert(out.rows.values.end(), after.values.begin() + k * dim,
                           after.values.begin() + (k + 1) * dim);
  };
  while (i < before.keys.size() || j < after.keys.size()) {
    if (j == after.keys.size() || (i < before.keys.size() && before.keys[i] < after.keys[j])) {
      out.removed.push_back(before.keys[i++]);
    } else if (i == before.keys.size() || after.keys[j] < before.keys[i]) {
      take(j++);
    } else {  // both: changed when any bit of the row differs
      if (std::memcmp(before.values.data() + i * dim, after.values.data() + j * dim,
                      dim * sizeof(float)) != 0)
        take(j);
      ++i;
      ++j;
    }
  }
  return out;
}

gathered_rows apply_changes(const gathered_rows& base, const row_changes& changes,
                            std::size_t dim) {
  gathered_rows out;
  out.keys.reserve(base.keys.size() + changes.rows.keys.size());
  out.values.reserve(out.keys.capacity() * dim);
  const auto& removed = changes.removed;
  const auto& rows = changes.rows;
  std::size_t i = 0, j = 0, r = 0;
  while (i < base.keys.size() || j < rows.keys.size()) {
    const bool from_base =
      j == rows.keys.size() || (i < base.keys.size() && base.keys[i] < rows.keys[j]);
    if (from_base) {
      const auto key = base.keys[i];
      while (r < removed.size() && removed[r] < key) ++r;
      if (r == removed.size() || removed[r] != key) {
        out.keys.push_back(key);
        out.values.insert(out.values.end(), base.values.begin() + i * dim,
                          base.values.begin() + (i + 1) * dim);
      }
      ++i;
      continue;
    }
    if (i < base.keys.size() && base.keys[i] == rows.keys[j]) ++i;  // replaced
    out.keys.push_back(rows.keys[j]);
    out.values.insert(out.values.end(), rows.values.begin() + j * dim,
                      rows.values.begin() + (j + 1) * dim);
    ++j;
  }
  return out;
}

std::string encode_ctr_delta(const ctr_model& changed, const std::vector<uint64_t>& removed,
                             const std::vector<uint64_t>& removed_wide) {
  const auto model_bytes = encode_ctr_model(changed);
  const auto words = words_of(model_bytes);
  capnp::ReaderOptions options;
  options.traversalLimitInWords = 4 * words.size() + 1024;
  capnp::FlatArrayMessageReader reader(words, options);
  capnp::MallocMessageBuilder builder(
    static_cast<unsigned>(words.size() + removed.size() + removed_wide.size() + 64));
  auto root = builder.initRoot<exported::ExportDelta>();
  root.setModel(reader.getRoot<exported::ExportedModel>());
  auto keys = root.initRemovedKeys(static_cast<unsigned>(removed.size() * sizeof(uint64_t)));
  if (!removed.empty()) std::memcpy(keys.begin(), removed.data(), keys.size());
  auto wide = root.initRemovedWideKeys(
    static_cast<unsigned>(removed_wide.size() * sizeof(uint64_t)));
  if (!removed_wide.empty()) std::memcpy(wide.begin(), removed_wide.data(), wide.size());
  auto flat = capnp::messageToFlatArray(builder);
  auto bytes = flat.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

export_result write_delta_version(const std::string& dir, const ctr_model& changed,
                                  const std::vector<uint64_t>& removed,
                                  const chain_position& position,
                                  std::chrono::system_clock::time_point created,
                                  const std::vector<uint64_t>& removed_wide) {
  const auto start = std::chrono::steady_clock::now();
  const auto bytes = encode_ctr_delta(changed, removed, removed_wide);
  const auto metadata =
    with_checksums(make_delta_export_metadata(changed, removed.size() + removed_wide.size(),
                                              chain_json(position),
                                              created),
                   {{delta_capnp_name, &bytes}});
  return write_model_version(dir, delta_capnp_name, bytes, metadata, start);
}

loaded_chain load_export_chain(const std::string& path, float max_parameter) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec))
    throw model_file_error(path + ": not a directory (give an export directory or a version "
                           "in one)");
  // A version in an export directory: the chain ending there; else the directory's newest.
  std::string root = path;
  uint64_t newest = UINT64_MAX;
  if (std::filesystem::exists(path + "/" + metadata_json_name, ec)) {
    const auto p = std::filesystem::path(path).lexically_normal();
    const auto name = (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
    const auto parent = (p.has_filename() ? p.parent_path() : p.parent_path().parent_path());
    if (name.empty() || name[0] == '0'
        || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw model_file_error(path + ": a version directory not named by its number, so its "
                             "chain cannot be found");
    root = parent.empty() ? "." : parent.string();
    newest = std::stoull(name);
  }
  loaded_chain out;
  std::vector<std::string> skipped;
  for (const auto v : versions_of(root, newest)) {
    try {
      out = chain_ending_at(root, v, max_parameter);
      out.skipped = std::move(skipped);
      return out;
    } catch (const damaged_version& e) {
      skipped.push_back(version_dir(root, v) + ": " + e.what());
    }
  }
  if (skipped.empty())
    throw model_file_error(path + ": no export version in it (DIR/<version>/ with model.capnp "
                           "or delta.capnp)");
  throw model_file_error(path + ": no complete version; the newest skipped: " + skipped.front());
}

export_result consolidate_chain(const std::string& path, const std::string& out,
                                std::vector<std::string>* skipped) {
  const auto start = std::chrono::steady_clock::now();
  auto chain = load_export_chain(path);
  if (skipped) *skipped = chain.skipped;
  if (chain.deltas == 0)
    throw std::invalid_argument(chain.path + " is a full version: nothing to fold");
  const auto& model = std::get<ctr_model>(chain.model);  // a chain with deltas: a CTR model
  chain_position pos;
  pos.clock = chain.clock;
  auto chain_text = json::parse(chain_json(pos));
  chain_text["consolidated_from"] = {{"base", chain.base_version}, {"newest", chain.version}};
  const auto metadata = consolidated_metadata(chain.base_metadata, model, chain_text.dump(),
                                              std::chrono::system_clock::now());
  auto result = write_ctr_version(model, metadata, out);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

} // namespace actorps
