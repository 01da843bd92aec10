// vocab/C1.tsv … vocab/C26.tsv of a CTR export: per categorical field, which row of the field's
// matrix (model.onnx's initializer <table>/C<f>, model.capnp's rows) serves each key.
//
//   key<TAB>row                   a header line
//   72057594037928001<TAB>1       then one line per key, ascending, rows 1, 2, …
//
// A key is actorps' criteo_key(field, value) (actors/ps/criteo_keys.hpp) in decimal; a key
// with no line gets row 0 (zeros: a value the model never saw). model.onnx's "indices" input is
// these rows.
#pragma once

#include "actors/serving/ctr_model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// "vocab/C<field + 1>.tsv", inside an export version directory.
std::string vocab_file_name(std::size_t field);

/// The directory of the vocabulary files in a version: "vocab".
inline constexpr const char* vocab_dir_name = "vocab";

/// The file of one field's vocabulary (served_keys), as above.
std::string vocab_file_text(const std::vector<uint64_t>& keys);

/// The keys of a vocabulary file in row order (keys[i] has row i + 1). Throws
/// std::invalid_argument naming `origin` and the line for a missing header, a malformed line, a
/// row out of sequence or keys not ascending.
std::vector<uint64_t> parse_vocab_file(const std::string& text, const std::string& origin);

} // namespace actorps
