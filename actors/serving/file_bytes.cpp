#include "actors/serving/file_bytes.hpp"

#include "actors/protocol/input_file.hpp"

namespace actorps {

std::string read_file_bytes(const std::string& path, uint64_t max_bytes) {
  std::string bytes;
  // a FIFO, a device or a directory is refused before any read (a FIFO would block)
  if (auto why = read_input_file(path, max_bytes, bytes); !why.empty()) throw file_read_error(why);
  return bytes;
}

} // namespace actorps
