#include "actors/roles/norm_bound.hpp"

#include <algorithm>

namespace actorps {

void norm_bound::taken(float norm) {
  if (taken_ >= warmup && median_ > 0) largest_ratio_ = std::max(largest_ratio_, norm / median_);
  if (recent_.size() < window) recent_.push_back(norm);
  else recent_[next_] = norm;
  next_ = (next_ + 1) % window;
  ++taken_;
  if (taken_ < warmup) return;
  scratch_.assign(recent_.begin(), recent_.end());
  auto mid = scratch_.begin() + static_cast<std::ptrdiff_t>((scratch_.size() - 1) / 2);
  std::nth_element(scratch_.begin(), mid, scratch_.end());
  median_ = *mid;
  limit_ = k_ > 0 && median_ > 0 ? k_ * median_ : std::numeric_limits<float>::infinity();
}

} // namespace actorps
