// The model spec: flag parsing and the deterministic, balanced cut into blocks and shards.
#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/placement_change.hpp"
#include "actors/model/mlp_plugin.hpp"
#include "actors/ps/model_registry.hpp"
#include "kernels/mlp.hpp"
#include "kernels/parameter_init.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

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
  block_layout layout(mlp_model({784, 256, 128, 10}), 4096, 3);
  CHECK(layout.total_floats() == mlp_parameter_count({784, 256, 128, 10}));
  REQUIRE(layout.tensors().size() == 6);
  CHECK(layout.tensors()[0].name == "dense0/kernel");
  CHECK(layout.tensors()[5].name == "dense2/bias");
  CHECK(layout.tensors()[0].shape == std::vector<uint32_t>{784, 256});
  CHECK(layout.tensors()[5].shape == std::vector<uint32_t>{10});
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
  block_layout a(mlp_model({784, 256, 128, 10}), 4096, 4), b(mlp_model({784, 256, 128, 10}), 4096, 4);
  std::vector<std::size_t> bytes;
  for (int s = 0; s < 4; ++s) {
    bytes.push_back(a.shard_floats(s) * sizeof(float));
    CHECK(a.shard_blocks(s) == b.shard_blocks(s));
  }
  auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
  MESSAGE("shard bytes: " << bytes[0] << " " << bytes[1] << " " << bytes[2] << " " << bytes[3]);
  CHECK(double(*hi) <= 1.1 * double(*lo));
}

TEST_CASE("a dense placement carried in the spec places each block where it says") {
  train_spec spec;
  spec.model = mlp_model({784, 256, 128, 10});
  spec.shards = 2;
  const block_layout lpt(spec);  // no placement: the largest-first rule of 2 shards
  const auto sizes = lpt.block_sizes();
  REQUIRE(sizes.size() == lpt.blocks().size());
  CHECK(sizes[0] == 4096u);
  CHECK(lpt.owners().size() == sizes.size());
  // the same placement written out gives the same layout
  spec.block_shards = lpt.owners();
  CHECK(invalid_block_placement(spec).empty());
  const block_layout same(spec);
  for (int s = 0; s < 2; ++s) CHECK(same.shard_blocks(s) == lpt.shard_blocks(s));
  // grown to 3 shards: only the blocks dense_after_resize moves change owner
  spec.shards = 3;
  spec.block_shards = dense_after_resize(sizes, lpt.owners(), 3);
  const block_layout grown(spec);
  CHECK(grown.owners() == spec.block_shards);
  std::size_t kept = 0, sum = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) kept += grown.owners()[i] == lpt.owners()[i];
  CHECK(kept > sizes.size() / 2);
  for (int s = 0; s < 3; ++s) {
    CHECK(grown.shard_floats(s) > 0);
    sum += grown.shard_floats(s);
    std::size_t offset = 0;  // a shard's buffer holds its blocks contiguously, in id order
    CHECK(std::is_sorted(grown.shard_blocks(s).begin(), grown.shard_blocks(s).end()));
    for (auto id : grown.shard_blocks(s)) {
      CHECK(grown.blocks()[id].shard == s);
      CHECK(grown.blocks()[id].shard_offset == offset);
      offset += grown.blocks()[id].size;
    }
  }
  CHECK(sum == grown.total_floats());
  // a placement of another length or naming a shard the run does not have is refused
  auto bad = spec;
  bad.block_shards.pop_back();
  CHECK(invalid_block_placement(bad).find("a dense placement of") == 0);
  CHECK_THROWS_AS(block_layout{bad}, std::invalid_argument);
  bad = spec;
  bad.block_shards[5] = 3;
  CHECK(invalid_block_placement(bad) == "block 5 is placed on shard 3 of 3");
  CHECK_THROWS_AS(block_layout{bad}, std::invalid_argument);
}

TEST_CASE("gather and scatter are inverse and shard buffers are contiguous") {
  block_layout layout(mlp_model({9, 7, 5}), 6, 3);
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

TEST_CASE("an MLP's named tensors start from the kernels' He-uniform values, bit for bit") {
  const std::vector<int> layers{33, 17, 9, 5};
  const auto model = mlp_model(layers);
  CHECK(model.name == "mlp:33-17-9-5");
  REQUIRE(model.tensors.size() == 6);
  CHECK(model.tensors[2].name == "dense1/kernel");
  CHECK(model.tensors[2].shape == std::vector<uint32_t>{17, 9});
  CHECK(initial_values(model, 7) == initial_parameters(layers, 7));
  CHECK(initial_values(model, 7) != initial_values(model, 8));
}

TEST_CASE("models are checked: names unique and printable, no zero dimension") {
  model_spec m;
  CHECK(invalid_model(m) == "the model has no tensors");
  m.tensors = {{"w", {3, 2}, tensor_init::zeros, 0}, {"w", {2}, tensor_init::zeros, 0}};
  CHECK(invalid_model(m) == "two tensors are named 'w'");
  m.tensors[1].name = "b c";
  CHECK(invalid_model(m).find("printable") != std::string::npos);
  m.tensors[1] = {"b", {0}, tensor_init::zeros, 0};
  CHECK(invalid_model(m) == "b [0] has a zero dimension");
  m.tensors[1].shape = {2};
  CHECK(invalid_model(m) == "");
  CHECK_THROWS_AS(block_layout(model_spec{}, 16, 1), std::invalid_argument);
}

TEST_CASE("--model resolves through the registry: bare widths mean mlp, unknown names list the known") {
  CHECK(make_model("784-256-10")->spec().name == "mlp:784-256-10");
  CHECK(make_model("mlp:20-32-3")->spec().tensors.size() == 4);
  CHECK_THROWS_WITH_AS(make_model("mlp:20-x"), doctest::Contains("at least two positive integers"),
                       model_error);
  CHECK_THROWS_WITH_AS(make_model("nosuch:1"), doctest::Contains("registered: deepfm, dlrm, lr, mlp, sparse-lr, wdl"), model_error);
  CHECK(make_model("mlp:20-32-3")->check_data(20, 3) == "");
  CHECK(make_model("mlp:20-32-3")->check_data(21, 3).find("takes 20 inputs") != std::string::npos);
}
