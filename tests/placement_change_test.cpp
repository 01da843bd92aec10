// A change of shard count moves the fewest buckets and blocks it can, to a balanced placement
// that follows from the old one and the new size alone.
#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/placement_change.hpp"
#include "kernels/sparse/key_buckets.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>

using namespace actorps;

namespace {

std::vector<uint16_t> round_robin(int shards) {
  std::vector<uint16_t> out;
  for (auto s : assign_buckets(default_bucket_count, shards)) out.push_back(uint16_t(s));
  return out;
}

std::vector<std::size_t> held_by(const std::vector<uint16_t>& owners, int shards) {
  std::vector<std::size_t> held(static_cast<std::size_t>(shards), 0);
  for (auto o : owners) {
    REQUIRE(o < shards);
    ++held[o];
  }
  return held;
}

/// The fewest moves any balanced placement needs: what each shard holds beyond the largest share
/// it could be given, and every bucket of a shard that is gone.
std::size_t fewest_moves(const std::vector<uint16_t>& before, int shards) {
  std::size_t before_shards = *std::max_element(before.begin(), before.end()) + 1u;
  auto held = held_by(before, int(std::max<std::size_t>(before_shards, std::size_t(shards))));
  const auto b = before.size(), p = std::size_t(shards);
  std::vector<std::size_t> kept(held.begin(), held.begin() + std::ptrdiff_t(p));
  std::sort(kept.rbegin(), kept.rend());
  std::size_t stay = 0;
  for (std::size_t i = 0; i < p; ++i) stay += std::min(kept[i], b / p + (i < b % p ? 1 : 0));
  return b - stay;
}

} // namespace

TEST_CASE("growing round-robin buckets from 2 shards to 3 moves a third of them") {
  auto before = round_robin(2);
  auto after = buckets_after_resize(before, 3);
  CHECK(moved_count(before, after) == 1365);  // 4096 / 3, not all 4096
  auto held = held_by(after, 3);
  CHECK(held == std::vector<std::size_t>{1366, 1365, 1365});
  // a bucket that stays keeps its shard; every moved one goes to the new shard
  for (std::size_t b = 0; b < before.size(); ++b)
    if (before[b] != after[b]) CHECK(after[b] == 2);
  // and back to 2: only the new shard's buckets move
  auto back = buckets_after_resize(after, 2);
  CHECK(moved_count(after, back) == 1365);
  CHECK(held_by(back, 2) == std::vector<std::size_t>{2048, 2048});
  // the same size moves nothing
  CHECK(buckets_after_resize(before, 2) == before);
}

TEST_CASE("bucket placements after a resize: balanced, minimal, deterministic for 1 to 8 shards") {
  for (int from = 1; from <= 8; ++from)
    for (bool skewed : {false, true})
    for (int to = 1; to <= 8; ++to) {
      // round robin, or one where the last shard holds more than its share
      auto before = round_robin(from);
      if (skewed)
        for (std::size_t b = 0; b < before.size(); b += 5) before[b] = uint16_t(from - 1);
      CAPTURE(from);
      CAPTURE(skewed);
      CAPTURE(to);
      auto after = buckets_after_resize(before, to);
      CHECK(after == buckets_after_resize(before, to));
      auto held = held_by(after, to);
      auto [lo, hi] = std::minmax_element(held.begin(), held.end());
      CHECK(*hi - *lo <= 1);
      CHECK(moved_count(before, after) == fewest_moves(before, to));
      // a chain of changes stays balanced and minimal at each step, and back at `from`
      auto again = buckets_after_resize(after, from);
      auto back = held_by(again, from);
      auto [blo, bhi] = std::minmax_element(back.begin(), back.end());
      CHECK(*bhi - *blo <= 1);
      CHECK(moved_count(after, again) == fewest_moves(after, from));
    }
}

TEST_CASE("a bucket placement refuses a shard count it cannot fill") {
  CHECK_THROWS_AS(buckets_after_resize({}, 2), std::invalid_argument);
  CHECK_THROWS_AS(buckets_after_resize({0, 1, 0}, 4), std::invalid_argument);
  CHECK_THROWS_AS(buckets_after_resize({0, 1}, 0), std::invalid_argument);
}

TEST_CASE("dense blocks after a resize: balanced within 1.1x, few moves, deterministic") {
  // the default MLP's blocks, placed as block_layout places them
  model_spec mlp{"mlp", {{"w0", {784, 256}}, {"b0", {256}}, {"w1", {256, 128}}, {"b1", {128}},
                         {"w2", {128, 10}}, {"b2", {10}}}};
  for (int from = 1; from <= 8; ++from) {
    block_layout layout(mlp, 1024, from);
    std::vector<uint32_t> sizes;
    std::vector<uint16_t> before;
    for (const auto& b : layout.blocks()) {
      sizes.push_back(b.size);
      before.push_back(uint16_t(b.shard));
    }
    for (int to = 1; to <= 8; ++to) {
      CAPTURE(from);
      CAPTURE(to);
      auto after = dense_after_resize(sizes, before, to);
      CHECK(after == dense_after_resize(sizes, before, to));
      std::vector<std::size_t> floats(std::size_t(to), 0);
      std::size_t moved_floats = 0;
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        REQUIRE(after[i] < to);
        floats[after[i]] += sizes[i];
        if (after[i] != before[i]) moved_floats += sizes[i];
      }
      auto [lo, hi] = std::minmax_element(floats.begin(), floats.end());
      if (to >= 2) CHECK(double(*hi) <= 1.1 * double(*lo));
      // what must move: the floats over the new share on each kept shard, and the removed ones
      const double total = double(layout.total_floats());
      if (to == from) CHECK(moved_floats <= 1024);  // a balanced placement stays (within a block)
      if (to > from) CHECK(double(moved_floats) <= total * (1.0 - double(from) / to) + 1024 * from);
      if (to < from) CHECK(double(moved_floats) <= total * double(from - to) / from + 1024 * to);
    }
  }
}

TEST_CASE("a resized spec moves only what changes owner, and the moves say exactly what") {
  train_spec spec;
  spec.model = {"wide", {{"w0", {784, 256}}, {"b0", {256}}, {"w1", {256, 10}}, {"b1", {10}}}};
  sparse_table_spec table;
  table.name = "emb";
  table.config.dim = 4;
  spec.model.sparse_tables.push_back(table);
  spec.block_floats = 1024;
  spec.shards = 2;
  place_buckets(spec);
  const block_layout two(spec);
  // 2 → 3 → 1 → 2: each step from the placement the one before recorded
  train_spec at = spec;
  for (int shards : {3, 1, 2}) {
    CAPTURE(shards);
    const auto next = resized_spec(at, shards);
    CHECK(next.shards == shards);
    CHECK(next.model.name == at.model.name);
    CHECK(next.bucket_shards == buckets_after_resize(at.bucket_shards, shards));
    const block_layout before(at), after(next);
    CHECK(after.owners() == next.block_shards);
    CHECK(invalid_block_placement(next).empty());
    CHECK(invalid_buckets(next).empty());
    const auto moves = placement_moves(at, next);
    std::size_t buckets = 0, blocks = 0, floats = 0;
    std::vector<int> bucket_owner(at.bucket_shards.begin(), at.bucket_shards.end());
    const auto owners = before.owners();
    std::vector<int> block_owner(owners.begin(), owners.end());
    for (std::size_t i = 0; i < moves.size(); ++i) {
      const auto& m = moves[i];
      CHECK(m.from != m.to);
      if (i > 0) CHECK(std::make_pair(moves[i - 1].from, moves[i - 1].to) < std::make_pair(m.from, m.to));
      CHECK(std::is_sorted(m.buckets.begin(), m.buckets.end()));
      for (auto b : m.buckets) {
        CHECK(bucket_owner[b] == m.from);
        bucket_owner[b] = m.to;
      }
      std::size_t f = 0;
      for (auto id : m.blocks) {
        CHECK(block_owner[id] == m.from);
        block_owner[id] = m.to;
        f += before.blocks()[id].size;
      }
      CHECK(f == m.dense_floats);
      buckets += m.buckets.size();
      blocks += m.blocks.size();
      floats += m.dense_floats;
    }
    // applying the moves to the old placement gives the new one; nothing else moved
    CHECK(std::equal(bucket_owner.begin(), bucket_owner.end(), next.bucket_shards.begin()));
    CHECK(std::equal(block_owner.begin(), block_owner.end(), next.block_shards.begin()));
    CHECK(buckets == moved_count(at.bucket_shards, next.bucket_shards));
    CHECK(blocks == moved_count(before.owners(), after.owners()));
    if (shards == 3) CHECK(buckets == 1365u);  // a third of the round-robin buckets
    if (shards == 1) CHECK(floats == before.shard_floats(1) + before.shard_floats(2));
    MESSAGE(at.shards << " -> " << shards << ": " << buckets << " buckets, " << blocks
                      << " blocks (" << floats << " floats) move");
    at = next;
  }
  // back at 2 shards: balanced, though not the layout the run started with
  const block_layout back(at);
  auto [lo, hi] = std::minmax(back.shard_floats(0), back.shard_floats(1));
  CHECK(double(hi) <= 1.1 * double(lo));
  CHECK(placement_moves(at, at).empty());
  CHECK_THROWS_AS(resized_spec(at, 0), std::invalid_argument);
  auto other = at;
  other.block_floats = 512;
  other.block_shards.clear();
  CHECK_THROWS_AS(placement_moves(at, other), std::invalid_argument);
}
