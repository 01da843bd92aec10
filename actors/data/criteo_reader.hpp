// Criteo display-ads rows from a TAB-separated file, plain or gzip, streamed: each worker reads
// its own part of one file in batches, never the whole file.
#pragma once

#include "actors/data/file_part.hpp"
#include "actors/ps/criteo_batch.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// How a criteo_reader treats a malformed line.
struct criteo_options {
  /// false: the first bad line throws dataset_error. true: a bad line is skipped and counted
  /// (lines_skipped(), first_skip_reason()), and reading goes on.
  bool skip_bad_lines = false;
};

/// Reads part `part` of `parts` of a file (or of each file of a directory in name order, as one
/// stream: file_part) of lines of 40 TAB-separated fields
///   <label> <I1> ... <I13> <C1> ... <C26>
/// as Criteo's display-ads logs are written. The label is 0 or 1. I1..I13 are decimal int64
/// (negative allowed, a leading '+' too) or empty (missing), given as criteo_dense_value (0 for
/// missing). C1..C26 are any bytes but a tab, typically 8 hex digits, or empty (missing), given
/// as criteo_key(field, value) taken straight from the bytes (no case folding, no trimming).
/// Lines may end in "\r\n"; an empty line is no row (nor counted as a data line below).
///
/// Parts, as libsvm_reader: for a plain file, part p reads the lines that *start* in bytes
/// [p·size/parts, (p+1)·size/parts); the parts together read every line once, none of them the
/// whole file. A gzip file cannot be entered mid-way: every part inflates the whole stream and
/// keeps the data lines whose 0-based index i has i % parts == part. An empty part is fine; a
/// file without a single data row is an error, found by the constructor.
///
/// Errors throw dataset_error naming the file, the 1-based line and the field, e.g.
///   train.tsv:17: field I3 'x1' is not an integer
///   train.tsv:4: 38 fields, expected 40 (label, I1-I13, C1-C26)
///   train.tsv:9: label '2' is not 0 or 1
///   train.tsv: no data rows (the file is empty or holds only empty lines)
/// A line with the wrong number of fields reports that, whatever else is wrong with it. The
/// line number of a part that starts mid-file is counted on the error path only.
/// Not thread-safe: one reader per worker thread.
///
///   criteo_reader reader("train.tsv.gz", worker, workers);
///   criteo_batch batch;
///   while (reader.next_batch(4096, batch) > 0) train_on(batch);
///   reader.rewind();  // the next epoch
class criteo_reader {
public:
  /// Throws std::invalid_argument unless 0 <= part < parts; dataset_error for a missing,
  /// unreadable or data-less file.
  criteo_reader(const std::string& path, int part = 0, int parts = 1,
                const criteo_options& options = {});

  /// Replaces `out` with the next up to `max_rows` rows of this part; returns how many (0: the
  /// part is done until rewind()). Throws std::invalid_argument for max_rows 0.
  size_t next_batch(size_t max_rows, criteo_batch& out);
  /// Passes the next up to `max_rows` rows without parsing them (a resumed worker reading on to
  /// its position); returns how many. Every data line is a row, as next_batch counts them; with
  /// skip_bad_lines, where a bad line is none, the rows are parsed to tell.
  size_t skip_rows(size_t max_rows);

  /// Starts the part again from its first line, and the counts below from zero.
  void rewind();
  /// Reads on into the files that appear in the directory later (file_part::follow).
  void follow() { lines_.follow(); }

  int64_t rows_read() const { return rows_read_; }          ///< rows returned since the start
  int64_t lines_skipped() const { return lines_skipped_; }  ///< bad lines skipped since then
  /// The error the first skipped line would have thrown (file:line: what); empty when none was.
  const std::string& first_skip_reason() const { return first_skip_reason_; }

  bool compressed() const { return lines_.compressed(); }
  const std::string& path() const { return lines_.path(); }

private:
  file_part lines_;
  criteo_options options_;
  int64_t rows_read_ = 0, lines_skipped_ = 0;
  std::string first_skip_reason_;
};

/// The non-empty lines of `path` (a file, or every file of a directory: stream_files), without
/// parsing them: the rows of one epoch over all parts when no line is bad. Reads the whole
/// file; throws dataset_error for a missing or unreadable one.
int64_t count_criteo_rows(const std::string& path);

/// The non-empty lines of each file of `path` that each of `parts` parts reads.
std::vector<stream_file_rows> count_criteo_parts(const std::string& path, int parts);

} // namespace actorps
