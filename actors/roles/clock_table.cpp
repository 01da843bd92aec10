#include "actors/roles/clock_table.hpp"

#include <algorithm>

namespace actorps {

clock_table::clock_table(std::size_t workers, int64_t clock, int32_t bound,
                         std::vector<uint32_t> incarnations)
  : finished_(workers, clock), pushed_(finished_), live_(workers, true),
    incarnation_(std::move(incarnations)), bound_(bound) {
  incarnation_.resize(workers, 0);
  recompute_min();
}

clock_table::clock_table(std::vector<int64_t> finished, const std::vector<uint32_t>& live,
                         int32_t bound, std::vector<uint32_t> incarnations,
                         std::vector<int64_t> pushed)
  : finished_(std::move(finished)),
    pushed_(pushed.size() == finished_.size() ? std::move(pushed) : finished_),
    live_(live.begin(), live.end()), incarnation_(std::move(incarnations)), bound_(bound) {
  live_.resize(finished_.size(), false);
  incarnation_.resize(finished_.size(), 0);
  recompute_min();
}

std::size_t clock_table::live_count() const {
  return static_cast<std::size_t>(std::count(live_.begin(), live_.end(), true));
}

int64_t clock_table::progress() const {
  if (min_ != no_live_workers) return min_;
  return finished_.empty() ? 0 : *std::max_element(finished_.begin(), finished_.end());
}

int64_t clock_table::finish(int32_t worker, int64_t clock) {
  auto before = progress();
  finished_[worker] = pushed_[worker] = clock + 1;
  recompute_min();
  return before;
}

int64_t clock_table::leave(int32_t worker) {
  auto before = progress();
  live_[worker] = false;
  recompute_min();
  return before;
}

int64_t clock_table::rejoin(int32_t worker, bool holds_push) {
  auto clock = holds_push ? std::max(progress(), pushed_[worker]) : progress();
  live_[worker] = true;
  finished_[worker] = clock;
  recompute_min();
  return clock;
}

int64_t clock_table::admit(int32_t worker, int64_t clock, uint32_t incarnation) {
  auto before = progress();
  finished_[worker] = clock;
  incarnation_[worker] = incarnation;
  recompute_min();
  return before;
}

void clock_table::recompute_min() {
  min_ = no_live_workers;
  for (std::size_t w = 0; w < finished_.size(); ++w)
    if (live_[w]) min_ = std::min(min_, finished_[w]);
}

} // namespace actorps
