// Export chains (EXPORT_FORMAT.md): while training (--export-every), an export directory gets a
// full version, then delta versions holding only what changed since the version before them —
// the sparse rows added or changed, the keys removed (tombstones), every dense tensor — until
// the next full one. A delta version is DIR/<v>/delta.capnp (schema ExportDelta) and
// metadata.json, whose "chain" names its base (the full version it builds on) and its
// predecessor, each with its clock and its data file's SHA-256.
//
//   auto chain = load_export_chain("exports");  // the newest complete chain, folded
//   consolidate_chain("exports", "exports");    // the same, written as one new full version
#pragma once

#include "actors/serving/ctr_model.hpp"
#include "actors/serving/model_export.hpp"
#include "actors/serving/served_model.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

inline constexpr const char* delta_capnp_name = "delta.capnp";

/// A chain that cannot be read as it claims to be built: a link names a predecessor or base
/// that is missing, or that is not the one it was written on (another chain's, rewritten).
/// what() names the link. Unlike a damaged file, a reader refuses it rather than skip it.
struct export_chain_error : model_file_error {
  using model_file_error::model_file_error;
};

/// A version's place in a chain: metadata.json's "chain" object.
struct chain_position {
  bool delta = false;
  int64_t clock = -1;                 ///< the global clock its parameters are of
  uint64_t base_version = 0;          ///< a delta's: the full version it builds on
  int64_t base_clock = -1;
  std::string base_sha256;            ///< of the base's model.capnp
  uint64_t predecessor_version = 0;   ///< a delta's: the version just before it
  int64_t predecessor_clock = -1;
  std::string predecessor_sha256;     ///< of its model.capnp (the base) or delta.capnp
};

/// The "chain" object's JSON text.
std::string chain_json(const chain_position& position);

/// What changed from one table to another (keys ascending in each).
struct row_changes {
  gathered_rows rows;             ///< the rows of `after` that `before` lacks or holds otherwise
  std::vector<uint64_t> removed;  ///< the keys of `before` that `after` lacks
};

/// The changes from `before` to `after` (rows of `dim` floats, compared bit for bit).
row_changes diff_rows(const gathered_rows& before, const gathered_rows& after, std::size_t dim);

/// `base` with `changes` applied: the removed keys dropped, the rows inserted or replaced.
gathered_rows apply_changes(const gathered_rows& base, const row_changes& changes,
                            std::size_t dim);

/// delta.capnp: `changed` (a CTR model whose tables hold the changed rows only) and the keys
/// removed since the predecessor: of its first table, and of "wide" (wdl, deepfm).
std::string encode_ctr_delta(const ctr_model& changed, const std::vector<uint64_t>& removed,
                             const std::vector<uint64_t>& removed_wide = {});

/// Writes a delta version into `dir` (staged and published as every version is): delta.capnp
/// of `changed`, `removed` and `removed_wide`, and metadata.json saying what it is and where it
/// stands in its chain. Returns the version's path, number and bytes; throws versioned_dir_error.
export_result write_delta_version(const std::string& dir, const ctr_model& changed,
                                  const std::vector<uint64_t>& removed,
                                  const chain_position& position,
                                  std::chrono::system_clock::time_point created,
                                  const std::vector<uint64_t>& removed_wide = {});

/// The model of the newest complete chain at `path`: an export directory, or a version in one
/// (the chain ending there). Versions are tried newest first: a full one (or one written before
/// chains) is a chain of its own; a delta is folded onto its base with every link between, in
/// order. A version that is damaged (a file missing, unreadable, or not the one its checksum
/// names), or builds on one that is, is skipped, and said in `skipped`; a chain that names a
/// missing link, or a link that is not the one it was written on, is refused
/// (export_chain_error naming the link).
struct loaded_chain {
  served_model model;
  std::string path;                   ///< the newest link: DIR/<v>
  uint64_t base_version = 0, version = 0;
  int64_t clock = -1;                 ///< the newest link's ("chain" clock; -1: not said)
  std::size_t deltas = 0;             ///< links folded onto the base
  std::string base_metadata;          ///< the base's metadata.json
  std::vector<std::string> skipped;   ///< "DIR/7: why", newest first
};
loaded_chain load_export_chain(const std::string& path,
                               float max_parameter = default_max_parameter);

/// Folds the newest complete chain at `path` (load_export_chain) into one full version of
/// `out` (model.capnp byte for byte what a full export at that clock holds, model.onnx,
/// vocab/, metadata.json from the base's). Throws as load_export_chain, and
/// std::invalid_argument when the chain is one full version already (nothing to fold).
export_result consolidate_chain(const std::string& path, const std::string& out,
                                std::vector<std::string>* skipped = nullptr);

} // namespace actorps
