// Refused connections, logged with a bound: a storm of strangers (2.2 M refused requests in 20 s
// grew one task's log by 105 MB) must not fill the disk. The first `burst` refusals of each
// window are logged one by one; the rest are counted, and the count is logged with the first
// refusal of a later window. Thread-safe (CAF's network threads call it).
#pragma once

#include "actors/protocol/log.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace actorps {

class refusal_log {
public:
  using clock = std::chrono::steady_clock;
  /// Where lines go (log_line by default) and what time it is (tests pass their own).
  using sink = std::function<void(log_level, const std::string& who, const std::string& text)>;
  using time_source = std::function<clock::time_point()>;

  explicit refusal_log(std::string who, int burst = 10,
                       clock::duration window = std::chrono::seconds(10),
                       sink out = [](log_level level, const std::string& who,
                                     const std::string& text) { log_line(level, who, text); },
                       time_source now = [] { return clock::now(); })
    : who_(std::move(who)), burst_(burst), window_(window), out_(std::move(out)),
      now_(std::move(now)), window_start_(now_()) {}

  /// Logs (or counts) that a connection from `peer` was refused, and why.
  void refused(const std::string& peer, const std::string& why) {
    std::lock_guard<std::mutex> guard(mutex_);
    auto now = now_();
    if (now - window_start_ >= window_) {
      if (suppressed_ > 0)
        out_(log_level::warn, who_,
                 "refused " + std::to_string(suppressed_) + " more connection(s) not logged one "
                 "by one (at most " + std::to_string(burst_) + " lines per "
                 + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(window_).count())
                 + " s)");
      window_start_ = now;
      in_window_ = 0;
      suppressed_ = 0;
    }
    if (++in_window_ > burst_) {
      ++suppressed_;
      return;
    }
    out_(log_level::info, who_, "refused a connection from " + peer + ": " + why);
  }

private:
  std::mutex mutex_;
  std::string who_;
  int burst_;
  clock::duration window_;
  sink out_;
  time_source now_;
  clock::time_point window_start_;
  int in_window_ = 0;
  int64_t suppressed_ = 0;
};

} // namespace actorps
