// What a user sees: `--metrics FILE.jsonl` (one JSON object per event, the contract that tests,
// benchmarks and plots read) and the progress line on the terminal (updated in place on a TTY,
// plain lines otherwise). Both belong to the chief, the only writer.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace actorps {

/// Builds one JSON object: json_object().add("event", "eval").add("clock", 40).str().
class json_object {
public:
  json_object& add(const char* key, const std::string& value);
  json_object& add(const char* key, const char* value) { return add(key, std::string(value)); }
  json_object& add(const char* key, double value);   ///< non-finite → null
  json_object& add(const char* key, int64_t value);
  json_object& add(const char* key, int value) { return add(key, int64_t{value}); }
  json_object& add(const char* key, uint64_t value) { return add(key, static_cast<int64_t>(value)); }
  json_object& add(const char* key, bool value);
  /// Adds a pre-rendered JSON value (an array or object) verbatim.
  json_object& add_raw(const char* key, const std::string& json);
  std::string str() const { return body_.empty() ? "{}" : body_ + "}"; }

private:
  void key(const char* k);
  std::string body_;
};

std::string json_escape(const std::string& text);

/// Appends JSON lines to a file; an empty path disables it. Lines reach the file at least every
/// half second, so `tail -f` and live plots follow a run. The constructor throws
/// std::runtime_error naming the file if it cannot be opened for writing.
class metrics_file {
public:
  explicit metrics_file(const std::string& path);
  ~metrics_file();
  metrics_file(const metrics_file&) = delete;
  metrics_file& operator=(const metrics_file&) = delete;

  void write(const json_object& event);
  void flush();

private:
  std::FILE* file_ = nullptr;
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();
};

/// The terminal progress line: redrawn in place (at most every 100 ms) on a TTY; on anything
/// else, printed as a plain line only when `important` (evaluations, the end).
class progress_line {
public:
  explicit progress_line(bool enabled);
  /// Whether show() would draw now; lets the caller skip formatting a line nobody sees.
  bool due(bool important) const;
  void show(const std::string& text, bool important);
  /// Ends the in-place line so later output starts on a fresh line.
  void finish();

private:
  bool enabled_;
  bool tty_;
  bool dirty_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

} // namespace actorps
