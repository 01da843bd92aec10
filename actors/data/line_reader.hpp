// The lines of a text file, plain or gzip-compressed, read in chunks: the one way the text
// readers (CSV, libsvm) get at their lines. A plain file can also be read by byte range, so
// that several workers each stream their own part of one file.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace actorps {

/// Reads the lines of `path`. zlib's gzopen reads plain and gzip files alike; only the chunk at
/// hand and the line that crosses its end are ever held. Throws dataset_error naming the file
/// when it is missing or unreadable, a gzip stream is corrupt or truncated, or a "line" grows
/// beyond 64 MiB (a binary file passed by mistake). Not thread-safe: one object per reader.
class line_reader {
public:
  explicit line_reader(const std::string& path);
  ~line_reader();
  line_reader(const line_reader&) = delete;
  line_reader& operator=(const line_reader&) = delete;

  /// True for a gzip file (zlib inflates it), false for a plain one.
  bool compressed() const { return compressed_; }

  /// Restricts a plain file to the lines that *start* at a byte offset in [begin, end): a line
  /// that crosses `begin` belongs to the range before it, one that crosses `end` to this one
  /// (Hadoop's split rule: ranges that tile the file give every line to exactly one of them).
  /// Starts reading at the range. Throws std::logic_error for a gzip file (not seekable).
  void restrict_to(uint64_t begin, uint64_t end);

  /// Reads the range (or the file) again from its first line.
  void rewind();

  /// The next line without its "\n" or "\r\n", valid until the next call; false at the end.
  bool next(std::string_view& line);

  /// The 1-based number, in the whole file, of the line next() returned last. For a range that
  /// starts past the beginning the first call counts the line ends before it (reading the file
  /// up to there), so it is meant for error messages, not for every line.
  int64_t line_number();

  /// The byte offset in the text (in the inflated stream for gzip) where that line starts.
  uint64_t line_offset() const { return last_line_offset_; }

  const std::string& path() const { return path_; }

private:
  std::string_view take_line(size_t stop);
  void refill();
  void seek(uint64_t offset);

  std::string path_;
  gzFile file_;
  bool compressed_ = false;
  std::vector<char> buffer_;
  size_t begin_ = 0;          ///< start of the line not yet returned
  size_t scanned_ = 0;        ///< [begin_, scanned_) holds no '\n'
  size_t end_ = 0;            ///< bytes read into buffer_
  uint64_t buffer_offset_ = 0;  ///< where buffer_[0] lies in the text
  bool at_end_ = false;
  uint64_t range_begin_ = 0, range_end_ = UINT64_MAX;
  int64_t lines_returned_ = 0;      ///< since the range's first line
  int64_t lines_before_range_ = -1;  ///< -1: not counted yet
  uint64_t first_line_offset_ = 0;   ///< where the range's first line starts
  uint64_t last_line_offset_ = 0;
};

/// The 1-based line that starts at byte `offset` of `path`: 1 + the line ends before it.
int64_t line_number_at(const std::string& path, uint64_t offset);

} // namespace actorps
