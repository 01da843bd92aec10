#include "actors/protocol/buffer_lease.hpp"

#include <utility>

namespace actorps {

void buffer_pool::give(float_buffer&& buffer) {
  float_buffer dropped;  // freed outside the lock
  std::lock_guard<std::mutex> guard{mutex_};
  if (kept_.size() < keep_)
    kept_.push_back(std::move(buffer));
  else
    dropped = std::move(buffer);
}

float_buffer buffer_pool::take(std::size_t n) {
  std::vector<float_buffer> stale;  // freed outside the lock
  {
    std::lock_guard<std::mutex> guard{mutex_};
    while (!kept_.empty()) {
      float_buffer buffer = std::move(kept_.back());
      kept_.pop_back();
      if (buffer.size() == n) return buffer;
      stale.push_back(std::move(buffer));
    }
  }
  return float_buffer(n);
}

std::size_t buffer_pool::kept() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return kept_.size();
}

} // namespace actorps
