#include "actors/ps/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace actorps {

std::optional<lr_schedule> parse_lr_schedule(const std::string& name) {
  if (name == "constant") return lr_schedule::constant;
  if (name == "cosine") return lr_schedule::cosine;
  if (name == "linear") return lr_schedule::linear;
  return std::nullopt;
}

const char* to_string(lr_schedule schedule) {
  switch (schedule) {
    case lr_schedule::constant: return "constant";
    case lr_schedule::cosine: return "cosine";
    case lr_schedule::linear: return "linear";
  }
  return "?";
}

float scheduled_learning_rate(lr_schedule schedule, float base, int64_t clock,
                              int64_t total_clocks) {
  if (schedule == lr_schedule::constant || total_clocks <= 0) return base;
  double t = std::clamp(double(clock) / double(total_clocks), 0.0, 1.0);
  double decay = schedule == lr_schedule::cosine ? 0.5 * (1.0 + std::cos(M_PI * t)) : 1.0 - t;
  return static_cast<float>(base * (lr_final_fraction + (1.0 - lr_final_fraction) * decay));
}

} // namespace actorps
