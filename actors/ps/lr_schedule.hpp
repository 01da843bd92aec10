// Learning-rate schedules, evaluated by each shard from the global clock (README: How it works):
// every shard computes the same rate for the same clock without any coordination.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace actorps {

enum class lr_schedule {
  constant,  ///< base rate throughout
  cosine,    ///< half a cosine from base down to final_fraction · base at the last clock
  linear,    ///< straight line from base down to final_fraction · base
};

/// The rate at the last clock of decaying schedules, as a fraction of the base rate.
inline constexpr float lr_final_fraction = 0.05f;

std::optional<lr_schedule> parse_lr_schedule(const std::string& name);
const char* to_string(lr_schedule schedule);

/// The learning rate for `clock` of a run of `total_clocks` (clock clamped to [0, total]).
float scheduled_learning_rate(lr_schedule schedule, float base, int64_t clock,
                              int64_t total_clocks);

} // namespace actorps
