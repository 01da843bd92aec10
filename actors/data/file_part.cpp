#include "actors/data/file_part.hpp"

#include <filesystem>
#include <stdexcept>

namespace actorps {

namespace {

/// The part's first argument, checked before the file is opened.
const std::string& checked(const std::string& path, int part, int parts, const char* reader) {
  if (parts < 1 || part < 0 || part >= parts)
    throw std::invalid_argument(std::string(reader) + ": part " + std::to_string(part) + " of "
                                + std::to_string(parts) + " (need 0 <= part < parts)");
  return path;
}

} // namespace

file_part::file_part(const std::string& path, int part, int parts, const char* reader)
    : lines_(checked(path, part, parts, reader)), part_(part), parts_(parts) {
  if (!lines_.compressed() && parts > 1) {
    const auto size = static_cast<unsigned __int128>(std::filesystem::file_size(path));
    lines_.restrict_to(static_cast<uint64_t>(size * part / parts),
                       static_cast<uint64_t>(size * (part + 1) / parts));
  }
}

bool file_part::ours(std::string_view data) {
  if (data.empty()) return false;
  if (!lines_.compressed()) return true;  // the byte range already chose
  return data_lines_seen_++ % parts_ == part_;
}

void file_part::rewind() {
  lines_.rewind();
  data_lines_seen_ = 0;
}

} // namespace actorps
