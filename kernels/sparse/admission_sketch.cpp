#include "kernels/sparse/admission_sketch.hpp"

#include "actors/ps/splitmix64.hpp"

#include <algorithm>
#include <stdexcept>

namespace actorps {

admission_sketch::admission_sketch(std::size_t bytes, uint64_t seed)
  : seed_(splitmix64_mix(seed ^ 0x61646d6974ull)) {  // "admit": not the rows' init stream
  if (bytes < min_bytes)
    throw std::invalid_argument("admission_sketch: " + std::to_string(bytes)
                                + " bytes is below the smallest sketch, "
                                + std::to_string(min_bytes));
  width_ = (bytes - sizeof(*this)) / depth_;
  counters_.assign(width_ * depth_, 0);
  counters_.shrink_to_fit();
}

std::size_t admission_sketch::slot(uint64_t hash, uint32_t row) const {
  // Kirsch and Mitzenmacher: row r's hash is h1 + r·h2, as good as independent ones for this;
  // the multiply-high maps it onto [0, width) without a division.
  const uint64_t h2 = splitmix64_mix(hash) | 1;
  const uint64_t h = hash + row * h2;
  const auto scaled = (static_cast<unsigned __int128>(h) * width_) >> 64;
  return row * width_ + static_cast<std::size_t>(scaled);
}

uint32_t admission_sketch::add(uint64_t key) {
  const uint64_t hash = splitmix64_mix(key ^ seed_);
  std::size_t at[default_depth];
  uint32_t least = max_count;
  for (uint32_t r = 0; r < depth_; ++r) {
    at[r] = slot(hash, r);
    least = std::min<uint32_t>(least, counters_[at[r]]);
  }
  // Conservative update: only the counters below the new estimate rise, to it. Counters other
  // keys pushed higher stay, which keeps their overcount from growing with every add.
  const uint32_t count = std::min(least + 1, max_count);
  for (uint32_t r = 0; r < depth_; ++r)
    if (counters_[at[r]] < count) counters_[at[r]] = static_cast<uint8_t>(count);
  // Decay, one counter an add: a key must earn its count again within about counters() adds.
  counters_[decay_at_] = static_cast<uint8_t>(counters_[decay_at_] >> 1);
  if (++decay_at_ == counters_.size()) decay_at_ = 0;
  return count;
}

uint32_t admission_sketch::estimate(uint64_t key) const {
  const uint64_t hash = splitmix64_mix(key ^ seed_);
  uint32_t least = max_count;
  for (uint32_t r = 0; r < depth_; ++r) least = std::min<uint32_t>(least, counters_[slot(hash, r)]);
  return least;
}

std::size_t admission_sketch::nonzero() const {
  return counters_.size()
         - static_cast<std::size_t>(std::count(counters_.begin(), counters_.end(), uint8_t(0)));
}

admission_sketch_state admission_sketch::save() const {
  return {depth_, decay_at_, counters_};
}

std::string admission_sketch::mismatch(const admission_sketch_state& state) const {
  if (state.depth != depth_ || state.counters.size() != counters_.size())
    return "admission sketch of " + std::to_string(state.depth) + " rows and "
           + std::to_string(state.counters.size()) + " counters, the table's has "
           + std::to_string(depth_) + " rows and " + std::to_string(counters_.size())
           + " (another --admission-memory)";
  if (state.decay_at >= counters_.size())
    return "admission sketch decay cursor " + std::to_string(state.decay_at) + " beyond its "
           + std::to_string(counters_.size()) + " counters";
  return "";
}

void admission_sketch::restore(const admission_sketch_state& state) {
  auto why = mismatch(state);
  if (!why.empty()) throw std::invalid_argument(why);
  std::copy(state.counters.begin(), state.counters.end(), counters_.begin());
  decay_at_ = static_cast<std::size_t>(state.decay_at);
}

} // namespace actorps
