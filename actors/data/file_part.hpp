// One worker's part of a text file of rows, the rule every streaming reader (libsvm, criteo)
// splits a file by, so that the parts read every row exactly once without any of them reading
// the whole file. A directory is read as one stream: its files in name order, each split so.
#pragma once

#include "actors/data/line_reader.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace actorps {

/// The files of a dataset path: the path itself when it is no directory; for a directory its
/// regular files (symbolic links followed) in name order, hidden ones (".name") left out.
/// Throws dataset_error for a directory without such files or one that cannot be listed.
std::vector<std::string> stream_files(const std::string& path);

/// Finds the first data line of `path` (stream_files), so that a dataset without one fails at
/// once, in every part. `is_data` tells a data line (default: any non-empty one); `lines`
/// names what else the files may hold, for the message. Throws dataset_error when none is found:
/// "PATH: no data rows (the file is empty or holds only LINES)".
void require_a_data_row(const std::string& path,
                        const std::function<bool(std::string_view)>& is_data = {},
                        const std::string& lines = "empty lines");

/// Part `part` of `parts` of a file, or of each file of a directory in turn (stream_files). A
/// plain file: the lines that *start* in bytes [part·size/parts, (part+1)·size/parts)
/// (line_reader::restrict_to). A gzip file cannot be entered in the middle: every part inflates
/// the whole stream and keeps the data lines whose 0-based index i in that file has
/// i % parts == part. The reader says which lines are data (not blank, not a comment) through
/// ours(). Not thread-safe.
///
///   file_part lines(path, worker, workers, "libsvm_reader");
///   for (std::string_view line; lines.next(line);)
///     if (lines.ours(data_of(line))) parse(line);
class file_part {
public:
  /// Throws std::invalid_argument "<reader>: part P of N (need 0 <= part < parts)", and
  /// dataset_error for a missing or unreadable file.
  file_part(const std::string& path, int part, int parts, const char* reader);

  /// The next line of the range (plain) or the file (gzip), going on into the next file of a
  /// directory at each file's end; see line_reader::next.
  bool next(std::string_view& line);
  /// Whether this part reads the line whose data (without blanks or comment) is `data`; never
  /// for empty data. For gzip it also counts the data line.
  bool ours(std::string_view data);
  /// Passes up to `max` of this part's data lines (those ours(data_of(line)) takes) unread:
  /// how a reader skips rows it need not parse. Returns how many it passed. A file of a
  /// directory this process has read this part of to its end before, unchanged since (its size
  /// and time), is passed whole without reading it again: a worker started again at a clock
  /// deep into a stream of daily files reads only the last file's lines before its place.
  template <class DataOf>
  std::size_t pass(std::size_t max, DataOf data_of) {
    std::size_t passed = 0;
    std::string_view line;
    while (passed < max) {
      passed += pass_known_files(max - passed);  // at a file's start only
      if (passed >= max) break;
      if (!line_in_file(line)) {
        if (!next_file()) break;
        continue;
      }
      if (ours(data_of(line))) ++passed;
    }
    return passed;
  }
  /// Starts the part again from its first line (of the first file).
  void rewind();
  /// Follows a directory that grows: at the end of its last file, next() lists the directory
  /// again and goes on into the files that appeared since, those whose names come after the
  /// last one it has (a name that sorts earlier came too late and is never read). Nothing for
  /// a plain file.
  void follow();

  int64_t line_number() { return lines_->line_number(); }  ///< for error messages only
  bool compressed() const { return lines_->compressed(); }
  /// The file the line next() returned last is in.
  const std::string& path() const { return lines_->path(); }
  /// Its index in the stream's files (0 for a plain file): changes when next() enters a file.
  std::size_t file_index() const { return file_; }
  /// Where that line starts in its file's text (line_reader::line_offset).
  uint64_t line_offset() const { return lines_->line_offset(); }

private:
  void open(std::size_t file);
  /// The next line of the file open (false at its end).
  bool line_in_file(std::string_view& line);
  /// At a file's end: opens the next one (false when there is none); see next().
  bool next_file();
  /// At a file's first line, with a file after it: passes whole files whose data lines of this
  /// part are known (read to the end before) and at most `max`; returns how many lines.
  std::size_t pass_known_files(std::size_t max);
  /// At a file's end: what its data lines of this part are, when it was read whole.
  void remember_file();
  /// follow(): appends the files that appeared since; whether there were any.
  bool list_again();

  std::string path_;  ///< as given: a file or a directory
  std::string dir_;   ///< the directory followed ("" when not following)
  std::vector<std::string> files_;
  std::size_t file_ = 0;
  std::unique_ptr<line_reader> lines_;
  int part_, parts_;
  const char* reader_;           ///< whose part: which lines are data is its rule
  int64_t data_lines_seen_ = 0;  ///< gzip: data lines of all parts so far in this file
  // the file open: its size and time then, whether no line of it was read yet, and the lines
  // ours() took of it
  uint64_t file_size_ = 0;
  int64_t file_time_ = 0;
  bool at_start_ = true;
  int64_t ours_in_file_ = 0;
};

/// One file of a stream and the data lines each part reads of it (count_stream_parts).
struct stream_file_rows {
  std::string path;
  uint64_t bytes = 0;
  std::vector<int64_t> rows;  ///< per part
};

/// Every file of `path` (stream_files) with the data lines (`is_data`) each of `parts` parts
/// reads of it by file_part's rule, one pass over each file; throws dataset_error.
std::vector<stream_file_rows> count_stream_parts(
  const std::string& path, int parts, const std::function<bool(std::string_view)>& is_data);

/// The same, with `is_data` told the file's reader too (its path, line number and offset), and
/// `enter` called with each file's path before its first line.
std::vector<stream_file_rows> count_stream_parts(
  const std::string& path, int parts,
  const std::function<bool(line_reader&, std::string_view)>& is_data,
  const std::function<void(const std::string&)>& enter);

} // namespace actorps
