// What fuzzing the decoders found (tests/fuzz): each finding's fix, asserted on the
// product's own calls. The reproducers themselves are replayed by the fuzz_* tests.
#include "actors/deploy/cluster_spec.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/ps/dataset.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

using namespace actorps;

namespace {

train_spec two_tensor_spec(int shards, uint32_t block_floats) {
  train_spec spec;
  spec.model.name = "findings";
  spec.model.tensors = {{"a", {1000, 7}, tensor_init::zeros, 0}, {"b", {13}, tensor_init::zeros, 0}};
  spec.shards = shards;
  spec.block_floats = block_floats;
  return spec;
}

/// The placement block_layout made before it used a heap: each block (largest first, ties by
/// id) onto the first shard holding the fewest floats.
std::vector<int> placement_by_scan(const block_layout& layout, int shards) {
  const auto& blocks = layout.blocks();
  std::vector<uint32_t> order(blocks.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return blocks[a].size > blocks[b].size; });
  std::vector<std::size_t> floats(shards, 0);
  std::vector<int> shard_of(blocks.size());
  for (auto id : order) {
    auto s = std::min_element(floats.begin(), floats.end()) - floats.begin();
    shard_of[id] = static_cast<int>(s);
    floats[s] += blocks[id].size;
  }
  return shard_of;
}

} // namespace

TEST_CASE("a TF_CONFIG holding a number beyond double's range is refused as malformed JSON") {
  // nlohmann throws out_of_range (406), not parse_error, for it: it used to end the process.
  CHECK_THROWS_WITH_AS(parse_tf_config(R"({"cluster": {"ps": [1e400]}})", "TF_CONFIG"),
                       doctest::Contains("TF_CONFIG: malformed JSON"), cluster_error);
  CHECK_THROWS_AS(parse_tf_config_task(R"({"task": {"type": "ps", "index": -1e999}})", "TF_CONFIG"),
                  cluster_error);
}

TEST_CASE("a spec of more shards or blocks than a layout may hold is refused before any allocation") {
  // A 200-byte shard init naming 2^31 - 1 shards made the shard allocate 16 GiB and scan
  // them once per block; one cutting 2^31 floats into blocks of 1 asked for 80 GiB.
  auto spec = two_tensor_spec(max_shards + 1, 4096);
  CHECK_THROWS_AS(block_layout{spec}, std::invalid_argument);
  auto fine = two_tensor_spec(2, 4096);
  block_layout layout(fine);
  std::vector<float> part(layout.shard_floats(0));
  auto buf = encode_shard_init(fine, 0, layout, part.data());
  // the same message with the shard count rewritten: decode_shard_init refuses it
  spec.shards = max_shards + 1;
  auto wide = decode_shard_init(encode_shard_init(spec, 0, layout, part.data()));
  REQUIRE_FALSE(wide);
  CHECK(describe(wide.error()).find("65537 shards") != std::string::npos);
  CHECK(decode_shard_init(buf));

  auto fine_cut = two_tensor_spec(2, 1);  // 7013 blocks: within the bound
  CHECK(invalid_cut(fine_cut.model, 1, 2).empty());
  train_spec huge = two_tensor_spec(2, 1);
  huge.model.tensors = {{"big", {1u << 21}, tensor_init::zeros, 0}};
  CHECK(invalid_cut(huge.model, 1, 2).find("more than 2^20") != std::string::npos);
  CHECK_THROWS_AS(block_layout{huge}, std::invalid_argument);
  CHECK(invalid_cut(huge.model, 2, 2).empty());  // 2^20 blocks exactly
}

TEST_CASE("the heap placement puts every block on the shard the scan did") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    int shards = 1 + static_cast<int>(rng() % 9);
    uint32_t block_floats = 1 + rng() % 700;
    auto spec = two_tensor_spec(shards, block_floats);
    block_layout layout(spec);
    auto expected = placement_by_scan(layout, shards);
    for (const auto& b : layout.blocks()) REQUIRE(b.shard == expected[b.id]);
  }
}

TEST_CASE("a run file's row count of 8e18 splits among workers without overflow") {
  // fuzz_wire: a forged run.capnp claiming 8 314 042 257 525 535 598 training rows made the
  // consistency check compute 2 · rows (signed overflow) while checking data positions
  const int64_t rows = 8314042257525535598;
  for (int workers : {1, 2, 3, 7, 65536}) {
    CAPTURE(workers);
    int64_t sum = 0;
    for (int w = 0; w < workers; ++w) {
      auto n = actorps::data_shard::rows_of(rows, w, workers);
      CHECK((n == rows / workers || n == rows / workers + 1));
      sum += n;
    }
    CHECK(sum == rows);
  }
  CHECK(actorps::data_shard::rows_of(10, 1, 3) == 3);  // [3, 6): as before
  CHECK(actorps::data_shard::rows_of(10, 2, 3) == 4);  // [6, 10)
  CHECK(actorps::data_shard::rows_of(rows, 2, 2) == 0);  // a worker outside the run
  CHECK(actorps::data_shard::rows_of(rows, -1, 2) == 0);
}
