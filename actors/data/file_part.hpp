// One worker's part of a text file of rows, the rule every streaming reader (libsvm, criteo)
// splits a file by, so that the parts read every row exactly once without any of them reading
// the whole file.
#pragma once

#include "actors/data/line_reader.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace actorps {

/// Part `part` of `parts` of a file. A plain file: the lines that *start* in bytes
/// [part·size/parts, (part+1)·size/parts) (line_reader::restrict_to). A gzip file cannot be
/// entered in the middle: every part inflates the whole stream and keeps the data lines whose
/// 0-based index i has i % parts == part. The reader says which lines are data (not blank, not
/// a comment) through ours(). Not thread-safe.
///
///   file_part lines(path, worker, workers, "libsvm_reader");
///   for (std::string_view line; lines.next(line);)
///     if (lines.ours(data_of(line))) parse(line);
class file_part {
public:
  /// Throws std::invalid_argument "<reader>: part P of N (need 0 <= part < parts)", and
  /// dataset_error for a missing or unreadable file.
  file_part(const std::string& path, int part, int parts, const char* reader);

  /// The next line of the range (plain) or the file (gzip); see line_reader::next.
  bool next(std::string_view& line) { return lines_.next(line); }
  /// Whether this part reads the line whose data (without blanks or comment) is `data`; never
  /// for empty data. For gzip it also counts the data line.
  bool ours(std::string_view data);
  /// Starts the part again from its first line.
  void rewind();

  int64_t line_number() { return lines_.line_number(); }  ///< for error messages only
  bool compressed() const { return lines_.compressed(); }
  const std::string& path() const { return lines_.path(); }

private:
  line_reader lines_;
  int part_, parts_;
  int64_t data_lines_seen_ = 0;  ///< gzip: data lines of all parts so far
};

} // namespace actorps
