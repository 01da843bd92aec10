// Reading a whole file, with errors that name it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace actorps {

/// A file that cannot be read; what() is "<path>: <why>".
struct file_read_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The bytes of `path`. Throws file_read_error for a missing or unreadable file, for anything
/// but a regular file (a directory, a FIFO, a device: refused before any read) and for a file
/// of more than `max_bytes`.
std::string read_file_bytes(const std::string& path, uint64_t max_bytes = UINT64_MAX);

} // namespace actorps
