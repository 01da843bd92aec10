// One-line diagnostics on stderr: `2026-11-24T03:55:01.123Z INFO chief: text`, written whole
// through the process's console (console.hpp), so that lines of concurrent actors never
// interleave and never glue onto the progress line.
#pragma once

#include "actors/protocol/console.hpp"

#include <string>

namespace actorps {

inline void log_line(log_level level, const std::string& who, const std::string& text) {
  console::process().log(level, who, text);
}

/// An INFO line, the level of most of what the roles say.
inline void log_line(const std::string& who, const std::string& text) {
  log_line(log_level::info, who, text);
}

} // namespace actorps
