#include "actors/protocol/data_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace actorps {

data_plan own_part(int32_t worker, int32_t workers, int64_t batches) {
  return {data_segment{workers, worker, 0, batches}};
}

int64_t plan_batches(const data_plan& plan) {
  int64_t out = 0;
  for (const auto& s : plan) out += s.count;
  return out;
}

plan_position locate(const data_plan& plan, int64_t index) {
  if (index >= 0)
    for (std::size_t s = 0; s < plan.size(); ++s) {
      if (index < plan[s].count) return {s, plan[s].first + index};
      index -= plan[s].count;
    }
  throw std::out_of_range("minibatch " + std::to_string(index) + " is not in the plan");
}

namespace {

/// Appends `s` to `plan`, joined with the last segment when it goes on from it.
void append(data_plan& plan, data_segment s) {
  if (s.count <= 0) return;
  if (!plan.empty()) {
    auto& last = plan.back();
    if (last.parts == s.parts && last.part == s.part && last.first + last.count == s.first) {
      last.count += s.count;
      return;
    }
  }
  plan.push_back(s);
}

} // namespace

data_plan plan_from(const data_plan& plan, int64_t index) {
  data_plan out;
  for (auto s : plan) {
    const auto skip = std::clamp<int64_t>(index, 0, s.count);
    index -= skip;
    s.first += skip;
    s.count -= skip;
    append(out, s);
  }
  return out;
}

std::vector<data_plan> share_out(const std::vector<data_plan>& rest, int32_t workers) {
  if (workers < 1) throw std::invalid_argument("share_out: no workers");
  int64_t total = 0;
  for (const auto& p : rest) total += plan_batches(p);
  std::vector<data_plan> out(static_cast<std::size_t>(workers));
  std::size_t w = 0;
  auto share = [&](std::size_t k) {
    return total / workers + (static_cast<int64_t>(k) < total % workers ? 1 : 0);
  };
  int64_t room = share(0);
  for (const auto& plan : rest)
    for (auto s : plan)
      while (s.count > 0) {
        while (room == 0) room = share(++w);  // a share of 0 (more workers than batches)
        const auto take = std::min(room, s.count);
        append(out[w], {s.parts, s.part, s.first, take});
        s.first += take;
        s.count -= take;
        room -= take;
      }
  return out;
}

} // namespace actorps
