// The model spec: flag parsing and the deterministic, balanced cut into blocks and shards.
#include "actors/protocol/model_spec.hpp"
#include "kernels/mlp.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

using namespace actorps;

TEST_CASE("layer widths parse from 784-256-128-10 and bad text is refused") {
  CHECK(parse_layers("784-256-128-10") == std::vector<int>{784, 256, 128, 10});
  CHECK(parse_layers("3-2") == std::vector<int>{3, 2});
  for (const char* bad : {"", "784", "784-x-10", "784--10", "-784-10", "784-10-", "784-0-10",
                          "784- 10", "99999999-10"})
    CHECK_MESSAGE(!parse_layers(bad), bad);
  CHECK(to_string(std::vector<int>{784, 256, 10}) == "784-256-10");
}

TEST_CASE("blocks cover every tensor exactly once, in model order") {
  block_layout layout({784, 256, 128, 10}, 4096, 3);
  CHECK(layout.total_floats() == mlp_parameter_count({784, 256, 128, 10}));
  REQUIRE(layout.tensors().size() == 6);
  CHECK(layout.tensors()[0].name == "dense0/kernel");
  CHECK(layout.tensors()[5].name == "dense2/bias");
  std::size_t next = 0;
  for (const auto& b : layout.blocks()) {
    CHECK(b.offset == next);
    CHECK(b.size <= 4096);
    CHECK(b.size > 0);
    next += b.size;
  }
  CHECK(next == layout.total_floats());
  std::size_t sum = 0;
  for (int s = 0; s < layout.shards(); ++s) sum += layout.shard_floats(s);
  CHECK(sum == layout.total_floats());
}

TEST_CASE("the default model over 4 shards is balanced within 1.1x and deterministic") {
  block_layout a({784, 256, 128, 10}, 4096, 4), b({784, 256, 128, 10}, 4096, 4);
  std::vector<std::size_t> bytes;
  for (int s = 0; s < 4; ++s) {
    bytes.push_back(a.shard_floats(s) * sizeof(float));
    CHECK(a.shard_blocks(s) == b.shard_blocks(s));
  }
  auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
  MESSAGE("shard bytes: " << bytes[0] << " " << bytes[1] << " " << bytes[2] << " " << bytes[3]);
  CHECK(double(*hi) <= 1.1 * double(*lo));
}

TEST_CASE("gather and scatter are inverse and shard buffers are contiguous") {
  block_layout layout({9, 7, 5}, 6, 3);
  std::vector<float> flat(layout.total_floats());
  std::iota(flat.begin(), flat.end(), 1.0f);
  std::vector<float> back(flat.size(), 0.0f);
  for (int s = 0; s < 3; ++s) {
    std::vector<float> part(layout.shard_floats(s));
    layout.gather(s, flat.data(), part.data());
    std::size_t next = 0;
    for (auto id : layout.shard_blocks(s)) {
      CHECK(layout.blocks()[id].shard == s);
      CHECK(layout.blocks()[id].shard_offset == next);
      next += layout.blocks()[id].size;
    }
    layout.scatter(s, part.data(), back.data());
  }
  CHECK(back == flat);
}

TEST_CASE("consistency modes parse and report their bound") {
  train_spec spec;
  spec.mode = *parse_consistency("sync");
  CHECK(spec.staleness_bound() == 0);
  spec.mode = *parse_consistency("ssp");
  spec.staleness = 3;
  CHECK(spec.staleness_bound() == 3);
  spec.mode = *parse_consistency("async");
  CHECK(spec.staleness_bound() == -1);
  CHECK_FALSE(parse_consistency("bsp"));
}
