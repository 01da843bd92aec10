// Key → bucket → shard placement: the hash pinned to fixed values, buckets spread evenly and
// shared out between shards by the documented round-robin rule.
#include "kernels/sparse/key_buckets.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorps {

TEST_CASE("bucket_of is pinned: a change of the hash moves every stored key") {
  // splitmix64's finaliser mod B, worked out by an independent Python implementation.
  CHECK(bucket_of(0, 4096) == 0);
  CHECK(bucket_of(1, 4096) == 1509);
  CHECK(bucket_of(2, 4096) == 1162);
  CHECK(bucket_of(42, 4096) == 1570);
  CHECK(bucket_of(12345678901234567ull, 4096) == 255);
  CHECK(bucket_of(1ull << 63, 4096) == 2442);
  CHECK(bucket_of(~0ull, 4096) == 3451);
  // A bucket count that is not a power of two uses all 64 bits of the mix.
  CHECK(bucket_of(1, 1000) == 789);
  CHECK(bucket_of(42, 1000) == 962);
  CHECK(bucket_of(~0ull, 1000) == 67);
  CHECK(bucket_of(123, 1) == 0);
}

TEST_CASE("bucket_of spreads sequential keys evenly over the buckets") {
  constexpr uint32_t buckets = default_bucket_count;
  constexpr uint64_t keys = 1u << 20;  // 256 per bucket on average, σ ≈ 16
  std::vector<uint32_t> count(buckets, 0);
  for (uint64_t key = 0; key < keys; ++key) ++count[bucket_of(key, buckets)];
  const auto [least, most] = std::minmax_element(count.begin(), count.end());
  MESSAGE("2^20 sequential keys in 4096 buckets: " << *least << " to " << *most << " per bucket");
  CHECK(*least >= 256 - 6 * 16);
  CHECK(*most <= 256 + 6 * 16);
}

TEST_CASE("bucket_of refuses zero buckets") {
  CHECK_THROWS_WITH_AS(bucket_of(1, 0), doctest::Contains("bucket count"),
                       std::invalid_argument);
}

TEST_CASE("assign_buckets: round robin, so each shard owns floor or ceil of B/P buckets") {
  const std::vector<int32_t> ten_on_four = assign_buckets(10, 4);
  CHECK(ten_on_four == std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1});

  struct layout { uint32_t buckets; int shards; };
  for (const layout l : {layout{4096, 1}, layout{4096, 3}, layout{4096, 7}, layout{4096, 4096},
                         layout{1000, 16}, layout{5, 5}}) {
    const uint32_t buckets = l.buckets;
    const int shards = l.shards;
    CAPTURE(buckets);
    CAPTURE(shards);
    const std::vector<int32_t> owner = assign_buckets(buckets, shards);
    REQUIRE(owner.size() == buckets);
    std::vector<uint32_t> owned(shards, 0);
    for (int32_t s : owner) {
      REQUIRE(s >= 0);
      REQUIRE(s < shards);
      ++owned[s];
    }
    const uint32_t floor = buckets / shards, extra = buckets % shards;
    for (int s = 0; s < shards; ++s) {
      CHECK(owned[s] == floor + (uint32_t(s) < extra ? 1 : 0));  // the first B mod P get one more
    }
    CHECK(assign_buckets(buckets, shards) == owner);  // the same table every time
  }
}

TEST_CASE("assign_buckets refuses a shard count that fits no bucket table") {
  CHECK_THROWS_WITH_AS(assign_buckets(0, 1), doctest::Contains("bucket count"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(assign_buckets(4096, 0), doctest::Contains("shard count"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(assign_buckets(4096, -2), doctest::Contains("got -2"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(assign_buckets(3, 4), doctest::Contains("4 shards for only 3 buckets"),
                       std::invalid_argument);
}

} // namespace actorps
