// Binary-labelled sparse rows from a libsvm / svmlight file, plain or gzip, streamed: each worker
// reads its own part of one file in batches, never the whole file.
#pragma once

#include "actors/data/file_part.hpp"
#include "actors/ps/sparse_batch.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// How a libsvm_reader treats a malformed line.
struct libsvm_options {
  /// false: the first bad line throws dataset_error. true: a bad line is skipped and counted
  /// (lines_skipped(), first_skip_reason()), and reading goes on.
  bool skip_bad_lines = false;
};

/// Reads part `part` of `parts` of a file (or of each file of a directory in name order, as one
/// stream: file_part) of lines
///   <label> <index>:<value> <index>:<value> ... [# comment]
/// separated by spaces or tabs. The label is 0/1 or -1/+1 (also written "+1", "1.0", "-1.0");
/// -1 is read as 0. An index is a decimal uint64 (a key, kept as written: libsvm's 1-based
/// indices stay 1-based); a value is a finite float, read locale-free. A `qid:<n>` right after
/// the label (svmlight's ranking format) is ignored. Lines may end in "\r\n"; blank lines and
/// lines holding only a comment are no rows. A row may have no pairs.
///
/// Parts: for a plain file, part p reads the lines that *start* in bytes
/// [p·size/parts, (p+1)·size/parts), so the parts together read every line exactly once without
/// any of them reading the whole file. A gzip file cannot be entered in the middle: every part
/// inflates the whole stream and keeps the data lines (blank and comment lines not counted)
/// whose 0-based index i has i % parts == part. An empty part is fine (it returns no rows); a
/// file without a single data row is an error, found by the constructor.
///
/// Errors throw dataset_error with the file, the 1-based line and column, e.g.
///   train.libsvm:17:1: label '2' is not 0 or 1 (nor -1 or +1)
///   train.libsvm:9:12: '7' is not an index:value pair
///   train.libsvm:4:3: feature index '18446744073709551616' is beyond 2^64-1
///   train.libsvm:5:3: value 'nan' of feature 7 is not a finite number
///   train.libsvm: no data rows (the file is empty or holds only blank and comment lines)
/// The line number of a part that starts mid-file is found, on the error path only, by counting
/// the line ends before the part. Not thread-safe: one reader per worker thread.
///
///   libsvm_reader reader("train.libsvm.gz", worker, workers);
///   sparse_batch batch;
///   while (reader.next_batch(256, batch) > 0) train_on(batch);
///   reader.rewind();  // the next epoch
class libsvm_reader {
public:
  /// Throws std::invalid_argument unless 0 <= part < parts; dataset_error for a missing,
  /// unreadable or data-less file.
  libsvm_reader(const std::string& path, int part = 0, int parts = 1,
                const libsvm_options& options = {});

  /// Replaces `out` with the next up to `max_rows` rows of this part; returns how many (0: the
  /// part is done until rewind()). Throws std::invalid_argument for max_rows 0.
  size_t next_batch(size_t max_rows, sparse_batch& out);
  /// Passes the next up to `max_rows` rows without parsing them, as criteo_reader::skip_rows.
  size_t skip_rows(size_t max_rows);

  /// Starts the part again from its first line, and the counts below from zero.
  void rewind();
  /// Reads on into the files that appear in the directory later (file_part::follow).
  void follow() { lines_.follow(); }

  int64_t rows_read() const { return rows_read_; }          ///< rows returned since the start
  int64_t lines_skipped() const { return lines_skipped_; }  ///< bad lines skipped since then
  /// The error the first skipped line would have thrown (file:line:column: what); empty when
  /// none was skipped.
  const std::string& first_skip_reason() const { return first_skip_reason_; }

  bool compressed() const { return lines_.compressed(); }
  const std::string& path() const { return lines_.path(); }

private:
  file_part lines_;
  libsvm_options options_;
  int64_t rows_read_ = 0, lines_skipped_ = 0;
  std::string first_skip_reason_;
};

/// The data lines of `path` (not blank, not only a comment), without parsing them: the rows of
/// one epoch over all parts when no line is bad. Reads the whole file; throws dataset_error for
/// a missing or unreadable one.
int64_t count_libsvm_rows(const std::string& path);

/// The data lines of each file of `path` (a file or a directory: stream_files) that each of
/// `parts` parts reads.
std::vector<stream_file_rows> count_libsvm_parts(const std::string& path, int parts);

} // namespace actorps
