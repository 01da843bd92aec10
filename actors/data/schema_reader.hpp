// A user's own log, TAB- or comma-separated, plain or gzip, decoded by a feature schema
// (actors/ps/feature_schema.hpp) into CTR batches, streamed as criteo_reader streams Criteo's layout:
// each worker reads its own part of the file (or of a directory's files), never the whole.
#pragma once

#include "actors/data/clocked_batches.hpp"
#include "actors/data/file_part.hpp"
#include "actors/ps/criteo_batch.hpp"
#include "actors/ps/feature_schema.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace actorps {

/// How a schema_reader cuts and treats lines.
struct schema_read_options {
  char delimiter = '\t';        ///< '\t' (tsv:) or ',' (csv:); no quoting either way
  bool skip_bad_lines = false;  ///< as criteo_options::skip_bad_lines
};

/// Reads part `part` of `parts` of a file or directory (file_part's rule, as criteo_reader)
/// whose lines hold the schema's columns in order, split at the delimiter. Each line becomes
/// a row of a criteo_batch with dense_width = the schema's, fields = the schema's key fields
/// (offsets filled when one is multi-hot), weights when the schema has a weight column:
/// - label: 0 or 1 (any number equal to them: "1", "1.0"); weight: a finite number ≥ 0;
/// - numeric: a number or empty (missing: 0 after any transform; a bucketized one gets the
///   missing key); log1p gives log(1 + max(x, 0)) as criteo_dense_value does, standardise
///   (x − mean) / std, bucketize the key criteo_key(table, decimal bucket index), the index
///   being how many boundaries are ≤ x;
/// - categorical: criteo_key(table, value), the missing key for an empty value, and with a
///   vocabulary out_of_vocabulary_key(table) for a value not in it;
/// - multi_hot: the values between separators (empty ones skipped), the first max_length
///   kept, each keyed as a categorical; an empty field is an empty bag;
/// - a cross: criteo_key(table, first + "\x1f" + second) of the two columns' values, the
///   missing key when either is empty.
/// Errors throw dataset_error naming file, line and column, e.g.
///   logs.tsv:17: column 3 (price) 'x1' is not a number
///   logs.tsv:4: 5 columns, expected 7 (as schema.json names them)
/// Not thread-safe: one reader per worker thread.
class schema_reader {
public:
  schema_reader(const std::string& path, int part, int parts,
                std::shared_ptr<const feature_schema> schema,
                const schema_read_options& options = {});

  /// Replaces `out` with the next up to `max_rows` rows of this part; returns how many (0: the
  /// part is done until rewind()). Throws std::invalid_argument for max_rows 0.
  size_t next_batch(size_t max_rows, criteo_batch& out);
  /// Passes the next up to `max_rows` rows without parsing them, as criteo_reader::skip_rows.
  size_t skip_rows(size_t max_rows);

  void rewind();
  void follow() { lines_.follow(); }

  int64_t rows_read() const { return rows_read_; }
  int64_t lines_skipped() const { return lines_skipped_; }
  const std::string& first_skip_reason() const { return first_skip_reason_; }
  const std::string& path() const { return lines_.path(); }
  const feature_schema& schema() const { return *schema_; }

private:
  /// Decodes `line` onto the end of `out`; returns "" or what is wrong (then `out` holds junk
  /// past its rows, which the caller cuts).
  std::string parse_row(std::string_view line, criteo_batch& out);

  file_part lines_;
  std::shared_ptr<const feature_schema> schema_;
  schema_read_options options_;
  std::vector<std::string_view> cells_;  ///< the current line's columns
  std::string cross_;                    ///< a cross's value, reused
  int64_t rows_read_ = 0, lines_skipped_ = 0;
  std::string first_skip_reason_;
};

// Compiled once, in schema_reader.cpp.
extern template class clocked_batches<schema_reader, criteo_batch>;

/// One worker's minibatches of a schema-described log, by clock (clocked_batches).
using schema_batches = clocked_batches<schema_reader, criteo_batch>;

} // namespace actorps
