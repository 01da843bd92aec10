// The terminal's one owner. The chief's progress line (stdout) and every log line (stderr) go
// through it, under one mutex, so that they cannot interleave: a log line printed while the
// progress line is on screen first clears it, then the progress line is drawn again below.
// On a TTY the progress line is redrawn in place, cut to the terminal's width; anywhere else
// it is printed as whole lines, with no carriage return at all.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>

namespace actorps {

/// How much the log says (`--log-level`): each level includes the ones before it.
enum class log_level { error, warn, info, debug };

/// "error", "warn", "info", "debug".
const char* to_string(log_level level);

/// Parses a --log-level value; nullopt for anything else.
std::optional<log_level> parse_log_level(const std::string& text);

/// Where a console writes. `out_tty`: whether the progress line may redraw in place;
/// `width`: its columns, 0 to ask the terminal of `out_fd` each time (then COLUMNS, then 80).
struct console_sinks {
  int out_fd = 1;
  int err_fd = 2;
  bool out_tty = false;
  int width = 0;
};

/// Thread-safe: every call takes the one mutex and writes whole lines with write(2).
///
///   console::process().log(log_level::warn, "chief", "worker:1 lost");
///   // 2026-11-24T03:55:01.123Z WARN chief: worker:1 lost
class console {
public:
  explicit console(console_sinks sinks);
  console(const console&) = delete;
  console& operator=(const console&) = delete;

  /// This process's stdout and stderr (a TTY or not, as they are).
  static console& process();

  void set_level(log_level level);
  /// Whether a line of `level` would be printed (lets a caller skip formatting it).
  bool logs(log_level level) const;
  /// `TIMESTAMP LEVEL who: text` on the error sink, when `level` is enabled.
  void log(log_level level, const std::string& who, const std::string& text);

  /// Whether the progress line redraws in place (the out sink is a TTY).
  bool in_place() const { return sinks_.out_tty; }
  /// In place: replaces the progress line on screen by `text`, cut to the width. Otherwise:
  /// prints `text` as a line of its own.
  void progress(const std::string& text);
  /// Ends the progress line on screen (a newline), so later output starts on a fresh line.
  void end_progress();

  /// The columns the progress line may take: the terminal's, COLUMNS, else 80.
  int width() const;

private:
  void write_all(int fd, const std::string& bytes) const;
  /// Called with the mutex held: output of stdio that went before ours goes first.
  void flush_stdio() const;
  std::string fitted(const std::string& text) const;

  console_sinks sinks_;
  bool process_ = false;  ///< the process's own stdout/stderr, which stdio shares
  std::atomic<log_level> level_{log_level::info};
  mutable std::mutex mutex_;
  std::string shown_;     ///< the progress line on screen now; "" when none
};

} // namespace actorps
