// Reading a whole file, with errors that name it.
#pragma once

#include <stdexcept>
#include <string>

namespace actorps {

/// A file that cannot be read; what() is "<path>: <why>".
struct file_read_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The bytes of `path`. Throws file_read_error for a missing or unreadable file and for a
/// directory.
std::string read_file_bytes(const std::string& path);

} // namespace actorps
