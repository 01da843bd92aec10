// Files named by a user or sent by a peer (datasets, the cluster file, checkpoints, exported
// models), opened only when they are regular files: a FIFO would block the reader until someone
// writes to it, /dev/zero never ends, a directory is no file. The kind is checked on the open
// descriptor (opened without blocking), so nothing is read before it, and a size bound is
// checked before anything is allocated for the contents.
#pragma once

#include <cstdint>
#include <string>

namespace actorps {

/// A regular file opened for reading (blocking reads), with its size when opened.
struct input_file {
  int fd = -1;        ///< -1: refused, see `why`
  uint64_t size = 0;
  std::string why;    ///< "<path>: a FIFO, not a regular file", "<path>: missing or ..."
  std::string reason; ///< the same without "<path>: "

  explicit operator bool() const { return fd >= 0; }
};

/// Opens `path` when it is a regular file (symbolic links followed) of at most `max_bytes`;
/// else returns fd -1 and why not, naming the path. The caller owns (closes) the descriptor.
input_file open_input_file(const std::string& path, uint64_t max_bytes = UINT64_MAX);

/// The whole of `path` into `out` when it is a regular file of at most `max_bytes`: "" then,
/// else why not, naming the path (nothing is read from anything else; a file that grows while
/// being read is cut at max_bytes and refused).
std::string read_input_file(const std::string& path, uint64_t max_bytes, std::string& out);

/// "a FIFO", "a directory", "a character device", ... for a st_mode that is not a regular file.
std::string file_kind(unsigned mode);

} // namespace actorps
