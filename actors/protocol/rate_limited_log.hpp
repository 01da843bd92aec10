// Repetitive log lines, rate-limited with a count: the first `burst` lines of a kind in a window
// are written as they come, the rest of that window only counted, and the count is written once
// the window is over — on the next line of that kind ("... (and 2 317 more like it in the last
// 10 s)"), or by flush() for a kind that fell silent. A stranger hammering a port then costs the
// log a few lines every window instead of one line per attempt (2.2 M refusals in 20 s had grown
// one task's log by 105 MB).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace actorps {

class rate_limited_log {
public:
  using clock = std::chrono::steady_clock;
  using sink = std::function<void(const std::string&)>;

  /// Writes through `out`; per kind at most `burst` lines per `window`.
  explicit rate_limited_log(sink out, std::chrono::seconds window = std::chrono::seconds(10),
                            uint32_t burst = 5);

  /// Writes `text` unless `kind` ("refused a data connection") already had `burst` lines in the
  /// current window; the first line after a window that held lines back says how many.
  /// Thread-safe; `out` is called outside the lock.
  void write(const std::string& kind, const std::string& text, clock::time_point now = clock::now());

  /// Writes the count of every kind whose window is over with lines held back ("(and 12 more
  /// like it in the last 10 s)" after the kind). Call it at next_flush().
  void flush(clock::time_point now = clock::now());

  /// When flush() next has something to write; nullopt when nothing is held back.
  std::optional<clock::time_point> next_flush() const;

  /// Lines held back so far, over all kinds (for tests and counters).
  uint64_t suppressed() const;

  /// " (and 2 317 more like it in the last 10 s)": `count` with thin groups of three digits.
  static std::string more_like_it(uint64_t count, std::chrono::seconds window);

private:
  struct kind_state {
    clock::time_point window_start;
    uint32_t written = 0;    // lines written in the current window
    uint64_t held_back = 0;  // lines counted, not written, in the current window
  };

  sink out_;
  std::chrono::seconds window_;
  uint32_t burst_;
  mutable std::mutex mutex_;
  std::map<std::string, kind_state> kinds_;
  uint64_t suppressed_ = 0;
};

/// A handler of (peer, why) pairs that passes at most `burst` calls per window and reason on to
/// `handler`, appending the count of the calls it held back to `why` of the next one of that
/// reason it passes (a handler that is not called again does not hear of the last window's
/// count). The reason is `why` up to its first '(' or ':' ("not a CAF peer ").
std::function<void(const std::string&, const std::string&)>
rate_limited(std::function<void(const std::string&, const std::string&)> handler,
             std::chrono::seconds window = std::chrono::seconds(10), uint32_t burst = 5);

} // namespace actorps
