#include "actors/protocol/placement_change.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace actorps {

namespace {

constexpr int most_shards = 65536;  // an owner is 16 bits

void check_shards(int shards, const char* what) {
  if (shards < 1 || shards > most_shards)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(shards)
                                + " shards, not 1 to 65536");
}

} // namespace

std::vector<uint16_t> buckets_after_resize(const std::vector<uint16_t>& before, int shards) {
  check_shards(shards, "buckets_after_resize");
  const auto buckets = before.size();
  if (buckets == 0) throw std::invalid_argument("buckets_after_resize: no buckets placed");
  if (static_cast<std::size_t>(shards) > buckets)
    throw std::invalid_argument("buckets_after_resize: " + std::to_string(shards)
                                + " shards for only " + std::to_string(buckets)
                                + " buckets would leave a shard with none");
  const auto p = static_cast<std::size_t>(shards);
  std::vector<std::size_t> held(p, 0);
  for (auto owner : before)
    if (owner < p) ++held[owner];
  // The larger shares go where most buckets already are: fewest moves.
  std::vector<std::size_t> by_held(p);
  std::iota(by_held.begin(), by_held.end(), std::size_t(0));
  std::stable_sort(by_held.begin(), by_held.end(),
                   [&](std::size_t a, std::size_t b) { return held[a] > held[b]; });
  std::vector<std::size_t> share(p, buckets / p);
  for (std::size_t i = 0; i < buckets % p; ++i) ++share[by_held[i]];
  std::vector<uint16_t> after(before);
  std::vector<std::size_t> kept(p, 0);
  std::vector<std::size_t> moving;
  for (std::size_t b = 0; b < buckets; ++b) {
    auto owner = before[b];
    if (owner < p && kept[owner] < share[owner]) ++kept[owner];
    else moving.push_back(b);
  }
  auto next = moving.begin();
  for (std::size_t s = 0; s < p; ++s)
    for (; kept[s] < share[s]; ++kept[s]) after[*next++] = static_cast<uint16_t>(s);
  return after;
}

std::size_t moved_count(const std::vector<uint16_t>& before, const std::vector<uint16_t>& after) {
  std::size_t moved = 0;
  for (std::size_t i = 0; i < before.size() && i < after.size(); ++i)
    moved += before[i] != after[i];
  return moved + std::max(before.size(), after.size()) - std::min(before.size(), after.size());
}

std::vector<uint16_t> dense_after_resize(const std::vector<uint32_t>& sizes,
                                         const std::vector<uint16_t>& before, int shards) {
  check_shards(shards, "dense_after_resize");
  if (sizes.size() != before.size())
    throw std::invalid_argument("dense_after_resize: " + std::to_string(sizes.size())
                                + " block sizes and " + std::to_string(before.size())
                                + " owners");
  const auto p = static_cast<std::size_t>(shards);
  const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t(0));
  const std::size_t cap = (total + p - 1) / p;
  std::vector<std::size_t> load(p, 0);
  std::vector<uint16_t> after(before);
  std::vector<std::size_t> moving;
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    auto owner = before[b];
    if (owner < p && load[owner] + sizes[b] <= cap) load[owner] += sizes[b];
    else moving.push_back(b);
  }
  // block_layout's rule for what moves: largest first onto the shard with the fewest floats
  std::stable_sort(moving.begin(), moving.end(),
                   [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
  using shard_load = std::pair<std::size_t, std::size_t>;  // (floats, shard)
  std::vector<shard_load> heap;
  for (std::size_t s = 0; s < p; ++s) heap.emplace_back(load[s], s);
  std::make_heap(heap.begin(), heap.end(), std::greater<shard_load>());
  for (auto b : moving) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<shard_load>());
    auto& least = heap.back();
    after[b] = static_cast<uint16_t>(least.second);
    least.first += sizes[b];
    std::push_heap(heap.begin(), heap.end(), std::greater<shard_load>());
  }
  return after;
}

train_spec resized_spec(const train_spec& before, int shards) {
  check_shards(shards, "resized_spec");
  const block_layout layout(before);
  train_spec after = before;
  after.shards = shards;
  if (!before.bucket_shards.empty())
    after.bucket_shards = buckets_after_resize(before.bucket_shards, shards);
  after.block_shards = dense_after_resize(layout.block_sizes(), layout.owners(), shards);
  return after;
}

std::vector<placement_move> placement_moves(const train_spec& before, const train_spec& after) {
  const block_layout from(before), to(after);
  if (from.blocks().size() != to.blocks().size() || from.total_floats() != to.total_floats())
    throw std::invalid_argument("placement_moves: the two specs cut the model differently");
  if (before.bucket_shards.size() != after.bucket_shards.size())
    throw std::invalid_argument("placement_moves: " + std::to_string(before.bucket_shards.size())
                                + " buckets before, " + std::to_string(after.bucket_shards.size())
                                + " after");
  std::map<std::pair<int, int>, placement_move> moves;
  auto move = [&](int a, int b) -> placement_move& {
    auto& m = moves[{a, b}];
    m.from = a;
    m.to = b;
    return m;
  };
  for (std::size_t i = 0; i < before.bucket_shards.size(); ++i)
    if (before.bucket_shards[i] != after.bucket_shards[i])
      move(before.bucket_shards[i], after.bucket_shards[i]).buckets.push_back(uint32_t(i));
  for (std::size_t i = 0; i < from.blocks().size(); ++i) {
    const auto& a = from.blocks()[i];
    const auto& b = to.blocks()[i];
    if (a.shard == b.shard) continue;
    auto& m = move(a.shard, b.shard);
    m.blocks.push_back(a.id);
    m.dense_floats += a.size;
  }
  std::vector<placement_move> out;
  for (auto& [key, m] : moves) out.push_back(std::move(m));
  return out;
}

} // namespace actorps
