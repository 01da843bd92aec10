#include "actors/protocol/console.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sys/ioctl.h>
#include <unistd.h>

namespace actorps {

namespace {

/// Clears the terminal line the cursor is on: back to its start, erase to its end.
constexpr const char* clear_line = "\r\033[K";

/// 2026-11-24T03:55:01.123Z: UTC, milliseconds, as ISO 8601 and every log collector read it.
std::string utc_timestamp() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  auto n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

const char* level_tag(log_level level) {
  switch (level) {
    case log_level::error: return "ERROR";
    case log_level::warn: return "WARN";
    case log_level::info: return "INFO";
    case log_level::debug: return "DEBUG";
  }
  return "INFO";
}

} // namespace

const char* to_string(log_level level) {
  switch (level) {
    case log_level::error: return "error";
    case log_level::warn: return "warn";
    case log_level::info: return "info";
    case log_level::debug: return "debug";
  }
  return "info";
}

std::optional<log_level> parse_log_level(const std::string& text) {
  for (auto level : {log_level::error, log_level::warn, log_level::info, log_level::debug})
    if (text == to_string(level)) return level;
  return std::nullopt;
}

console::console(console_sinks sinks) : sinks_(sinks) {}

console& console::process() {
  static console* the = [] {
    auto* c = new console({STDOUT_FILENO, STDERR_FILENO, isatty(STDOUT_FILENO) == 1, 0});
    c->process_ = true;
    return c;
  }();  // never destroyed: actors may still log while static destructors run
  return *the;
}

void console::set_level(log_level level) { level_ = level; }

bool console::logs(log_level level) const { return level <= level_.load(); }

int console::width() const {
  if (sinks_.width > 0) return sinks_.width;
  winsize ws{};
  if (ioctl(sinks_.out_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    int n = std::atoi(columns);
    if (n > 0) return n;
  }
  return 80;
}

void console::write_all(int fd, const std::string& bytes) const {
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    auto n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a closed terminal: nothing left to tell it
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void console::flush_stdio() const {
  if (!process_) return;
  std::fflush(stdout);
  std::fflush(stderr);
}

std::string console::fitted(const std::string& text) const {
  // One column short of the width: a line that fills the last column makes some terminals
  // wrap, and the next carriage return would then redraw only its second half.
  auto columns = static_cast<std::size_t>(std::max(1, width() - 1));
  return text.size() <= columns ? text : text.substr(0, columns);
}

void console::log(log_level level, const std::string& who, const std::string& text) {
  if (!logs(level)) return;
  auto line = utc_timestamp() + " " + level_tag(level) + " " + who + ": " + text + "\n";
  std::lock_guard<std::mutex> guard(mutex_);
  flush_stdio();
  if (!shown_.empty()) write_all(sinks_.out_fd, clear_line);
  write_all(sinks_.err_fd, line);
  if (!shown_.empty()) write_all(sinks_.out_fd, shown_);  // again, below the log line
}

void console::progress(const std::string& text) {
  std::lock_guard<std::mutex> guard(mutex_);
  flush_stdio();
  if (!sinks_.out_tty) {
    write_all(sinks_.out_fd, text + "\n");
    return;
  }
  shown_ = fitted(text);
  write_all(sinks_.out_fd, clear_line + shown_);
}

void console::end_progress() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (shown_.empty()) return;
  flush_stdio();
  write_all(sinks_.out_fd, "\n");
  shown_.clear();
}

} // namespace actorps
