#include "actors/protocol/rate_limited_log.hpp"

#include <memory>
#include <utility>
#include <vector>

namespace actorps {

rate_limited_log::rate_limited_log(sink out, std::chrono::seconds window, uint32_t burst)
  : out_(std::move(out)), window_(window), burst_(burst) {}

std::string rate_limited_log::more_like_it(uint64_t count, std::chrono::seconds window) {
  auto digits = std::to_string(count);
  std::string grouped;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ' ';
    grouped += digits[i];
  }
  return " (and " + grouped + " more like it in the last " + std::to_string(window.count())
         + " s)";
}

void rate_limited_log::write(const std::string& kind, const std::string& text,
                             clock::time_point now) {
  std::string line;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    auto [it, fresh] = kinds_.try_emplace(kind, kind_state{now, 0, 0});
    auto& k = it->second;
    std::string summary;
    if (!fresh && now - k.window_start >= window_) {
      if (k.held_back > 0) summary = more_like_it(k.held_back, window_);
      k = kind_state{now, 0, 0};
    }
    if (k.written >= burst_) {
      ++k.held_back;
      ++suppressed_;
      return;
    }
    ++k.written;
    line = text + summary;
  }
  out_(line);
}

void rate_limited_log::flush(clock::time_point now) {
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    for (auto it = kinds_.begin(); it != kinds_.end();) {
      auto& k = it->second;
      if (now - k.window_start < window_) {
        ++it;
        continue;
      }
      if (k.held_back > 0) lines.push_back(it->first + more_like_it(k.held_back, window_));
      it = kinds_.erase(it);  // a quiet kind starts afresh
    }
  }
  for (auto& line : lines) out_(line);
}

std::optional<rate_limited_log::clock::time_point> rate_limited_log::next_flush() const {
  std::lock_guard<std::mutex> guard{mutex_};
  std::optional<clock::time_point> next;
  for (auto& [kind, k] : kinds_)
    if (k.held_back > 0 && (!next || k.window_start + window_ < *next))
      next = k.window_start + window_;
  return next;
}

uint64_t rate_limited_log::suppressed() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return suppressed_;
}

std::function<void(const std::string&, const std::string&)>
rate_limited(std::function<void(const std::string&, const std::string&)> handler,
             std::chrono::seconds window, uint32_t burst) {
  // The limiter's sink hands the (possibly extended) text back through `pending`: write()
  // calls it synchronously, so one limiter per handler and a lock around the pair suffice.
  struct state {
    std::mutex mutex;
    std::string passed;
    bool was_passed = false;
    rate_limited_log log;
    state(std::chrono::seconds w, uint32_t b)
      : log([this](const std::string& text) { passed = text, was_passed = true; }, w, b) {}
  };
  auto s = std::make_shared<state>(window, burst);
  return [s, handler = std::move(handler)](const std::string& peer, const std::string& why) {
    std::string text;
    {
      std::lock_guard<std::mutex> guard{s->mutex};
      s->was_passed = false;
      // One kind per reason: its words before the details ("not a CAF peer (its first ...").
      s->log.write(why.substr(0, why.find_first_of("(:")), why);
      if (!s->was_passed) return;
      text = std::move(s->passed);
    }
    if (handler) handler(peer, text);
  };
}

} // namespace actorps
