// One-line diagnostics on stderr, written whole so lines of concurrent actors never interleave.
#pragma once

#include <cstdio>
#include <string>

namespace actorps {

inline void log_line(const std::string& who, const std::string& text) {
  auto line = "[" + who + "] " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

} // namespace actorps
