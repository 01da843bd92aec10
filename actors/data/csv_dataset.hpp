// A labelled dataset from a CSV file, plain or gzip-compressed: the format a user tries first.
// Read whole (load_csv: a test split) or streamed (csv_reader: each worker its part of each file
// of a directory, in batches, as libsvm and criteo are read).
#pragma once

#include "actors/data/file_part.hpp"
#include "actors/ps/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace actorps {

/// How load_csv reads a file.
struct csv_options {
  int label_column = 0;        ///< 0-based; -1: the last column
  std::optional<bool> header;  ///< nullopt: detect (a first line with a non-numeric feature field
                               ///< is a header)
  char delimiter = ',';
  /// csv_reader: a batch short of max_rows at the part's end is dropped (next_batch returns 0),
  /// so that every batch a dense model trains on has the same rows.
  bool whole_batches = false;
  /// csv_reader: when > 0, a label >= classes is refused (a file a followed stream gains must fit
  /// the model the first files set).
  int classes = 0;
};

/// Dense rows: x holds rows() × cols floats, row-major; y each row's class.
struct dense_batch {
  int cols = 0;
  std::vector<float> x;
  std::vector<int32_t> y;
  std::size_t rows() const { return y.size(); }
  void clear() {
    x.clear();
    y.clear();
  }
};

/// One field of a CSV line: its text (trimmed, enclosing quotes removed) and the 1-based column
/// where it starts.
struct csv_field {
  std::string_view text;
  std::size_t column;
};

/// Loads a CSV file, plain or gzip (zlib's gzopen reads both transparently), into a dataset:
/// the label column holds class indices 0..K-1 (integers; K = max label + 1 = dataset.classes),
/// every other column a numeric feature (float). Throws dataset_error naming file, line and
/// column on a bad field, a ragged row, a negative or fractional label, an empty file.
///
/// The file is read in chunks, never whole. Fields may be surrounded by spaces or tabs and
/// enclosed in double quotes (which may hold the delimiter; no line breaks inside); lines may
/// end in "\r\n"; blank lines are skipped; a UTF-8 byte order mark is ignored. Features are
/// read locale-free and correctly rounded to float; NaN, infinity and values beyond float's
/// range are refused, since one of them silently poisons a model. A label may be written as
/// an integral float ("3.0", numpy's "3.000000000000000000e+00"). Lines and columns in
/// messages are 1-based, as editors show them, e.g.
///   data.csv:17:4: 'abc' is not a number (field 2)
///   data.csv:9: 5 fields, expected 21 (as on line 1)
///   data.csv:3:1: label '2.5' is not a non-negative integer
///   data.csv: no data rows
/// Throws std::invalid_argument for a label_column below -1 or a delimiter that cannot
/// separate fields ('"', '\r', '\n').
dataset load_csv(const std::string& path, const csv_options& options = {});

/// Reads part `part` of `parts` of a CSV file, or of each file of a directory in name order as
/// one stream (file_part's rule: a plain file by byte range, a gzip file by data line index), in
/// batches, with load_csv's rules and messages. Each file's first non-blank line is a header
/// when it looks like one (or options.header says so) and is skipped, whichever part reads it;
/// every file must have the first one's number of fields ("b.csv:4: 5 fields, expected 3 (as in
/// a.csv)"). Throws dataset_error for a stream without a single non-blank line. Not
/// thread-safe.
///
///   csv_reader reader("days/", worker, workers);
///   dense_batch batch;
///   while (reader.next_batch(256, batch) > 0) train_on(batch);
///   reader.rewind();  // the next epoch
class csv_reader {
public:
  /// Throws std::invalid_argument for a bad part or option; dataset_error as above.
  csv_reader(const std::string& path, int part = 0, int parts = 1,
             const csv_options& options = {});

  /// Replaces `out` with the next up to `max_rows` rows of this part; returns how many (0: the
  /// part is done until rewind()). Throws dataset_error naming file, line and column of a bad
  /// line, std::invalid_argument for max_rows 0.
  std::size_t next_batch(std::size_t max_rows, dense_batch& out);
  /// Starts the part again from its first line.
  void rewind() { lines_.rewind(); }
  /// Reads on into the files that appear in the directory later (file_part::follow).
  void follow() { lines_.follow(); }

  /// Feature columns (fields but the label) of every row.
  int cols() const { return static_cast<int>(expected_ - 1); }

private:
  /// Reads the head (first non-blank line) of the file lines_ is in now.
  void enter();

  file_part lines_;
  csv_options options_;
  std::string first_file_;  ///< the file that fixed the number of fields
  std::size_t expected_ = 0, label_ = 0;
  std::size_t file_ = SIZE_MAX;        ///< the file whose head was read last
  uint64_t header_at_ = UINT64_MAX;    ///< where that file's header starts (none: UINT64_MAX)
  int64_t head_line_ = 0;              ///< that file's first non-blank line
  std::vector<csv_field> fields_;
};

/// What one pass over a CSV stream finds without parsing features: each file's data lines per
/// part (file_part's rule) and the range of the labels, which set the classes.
struct csv_counts {
  std::vector<stream_file_rows> files;
  int64_t rows = 0;
  int cols = 0;                         ///< feature columns
  int32_t min_label = 0, max_label = 0;
};

/// Counts `path` (a file or a directory: stream_files) for `parts` parts, checking each line's
/// number of fields and its label (load_csv's messages); a bad feature is left to the reader.
/// Throws dataset_error, also for a stream without data rows.
csv_counts count_csv_parts(const std::string& path, int parts, const csv_options& options = {});

} // namespace actorps
