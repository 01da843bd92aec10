// How much this process's log lines on stderr say (`--log-level` of the command): a program
// that embeds the runtime sets it as the command does. The progress line is not a log line and
// is never filtered.
#pragma once

#include <string>

namespace actorps {

/// Sets this process's log level to `level`: "error", "warn", "info" (the default) or "debug",
/// each with the levels before it. False, the level unchanged, for any other text.
bool set_log_level(const std::string& level);

/// Whether `level` is one set_log_level takes.
bool is_log_level(const std::string& level);

/// Writes an INFO line on stderr as the runtime's own are written (`<time> INFO who: text`),
/// whole, never glued onto the progress line.
void log_info(const std::string& who, const std::string& text);

} // namespace actorps
