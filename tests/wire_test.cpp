// The wire format: encoders, zero-copy decoders, malformed input, and the bulk (de)serialiser
// that carries a wire_buffer across processes.
#include "actors/model/mlp_plugin.hpp"
#include "actors/protocol/messages.hpp"

#include <caf/all.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <doctest/doctest.h>

#include <numeric>

using namespace actorps;

namespace {

train_spec small_spec() {
  train_spec spec;
  spec.model = mlp_model({5, 7, 3});
  spec.block_floats = 8;
  spec.shards = 3;
  spec.workers = 4;
  spec.mode = consistency::ssp;
  spec.staleness = 3;
  spec.optimizer.kind = optimizer_kind::adam;
  spec.optimizer.learning_rate = 0.002f;
  spec.seed = 99;
  return spec;
}

std::vector<float> iota_floats(std::size_t n, float start) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

} // namespace

TEST_CASE("a push round-trips and its decoded blocks point into the buffer") {
  auto spec = small_spec();
  block_layout layout(spec);
  auto grad = iota_floats(layout.total_floats(), 0.5f);
  for (int32_t s = 0; s < spec.shards; ++s) {
    auto buf = encode_push(2, 17, s, layout, grad.data());
    CHECK(buf.size_bytes() % 8 == 0);
    auto push = decode_push(buf);
    REQUIRE(push);
    CHECK(push->worker == 2);
    CHECK(push->clock == 17);
    CHECK(push->shard == s);
    REQUIRE(push->blocks.size() == layout.shard_blocks(s).size());
    for (std::size_t i = 0; i < push->blocks.size(); ++i) {
      const auto& view = push->blocks[i];
      const auto& info = layout.blocks()[layout.shard_blocks(s)[i]];
      CHECK(view.id == info.id);
      REQUIRE(view.count == info.size);
      auto* begin = reinterpret_cast<const uint8_t*>(view.values);
      CHECK(begin >= buf.bytes());  // zero copy: inside the received buffer
      CHECK(begin + view.count * 4 <= buf.bytes() + buf.size_bytes());
      for (std::size_t k = 0; k < view.count; ++k) CHECK(view.values[k] == grad[info.offset + k]);
    }
  }
}

TEST_CASE("a push carries little more than its floats") {
  train_spec spec;  // the default model, two shards
  spec.model = mlp_model({784, 256, 128, 10});
  block_layout layout(spec);
  std::vector<float> grad(layout.total_floats(), 1.0f);
  std::size_t total = 0;
  for (int s = 0; s < spec.shards; ++s) total += encode_push(0, 0, s, layout, grad.data()).size_bytes();
  auto floats = layout.total_floats() * sizeof(float);
  CHECK(total >= floats);
  CHECK(total < floats + floats / 100);  // < 1 % envelope
}

TEST_CASE("shard parameters and init round-trip through scatter and the spec") {
  auto spec = small_spec();
  block_layout layout(spec);
  auto flat = iota_floats(layout.total_floats(), -3.0f);
  std::vector<float> rebuilt(layout.total_floats(), 0.0f);
  for (int32_t s = 0; s < spec.shards; ++s) {
    std::vector<float> part(layout.shard_floats(s));
    layout.gather(s, flat.data(), part.data());
    auto buf = encode_shard_parameters(s, 4, 9, layout, part.data());
    auto view = scatter_shard_parameters(buf, layout, rebuilt.data());
    REQUIRE(view);
    CHECK(view->shard == s);
    CHECK(view->min_clock == 4);
    CHECK(view->newest_clock == 9);

    auto init = decode_shard_init(encode_shard_init(spec, s, layout, part.data()));
    REQUIRE(init);
    CHECK(init->shard == s);
    CHECK(init->spec.model.name == spec.model.name);
    REQUIRE(init->spec.model.tensors.size() == spec.model.tensors.size());
    for (std::size_t i = 0; i < spec.model.tensors.size(); ++i) {
      CHECK(init->spec.model.tensors[i].name == spec.model.tensors[i].name);
      CHECK(init->spec.model.tensors[i].shape == spec.model.tensors[i].shape);
      CHECK(init->spec.model.tensors[i].scale == spec.model.tensors[i].scale);
    }
    CHECK(init->spec.block_floats == spec.block_floats);
    CHECK(init->spec.shards == spec.shards);
    CHECK(init->spec.workers == spec.workers);
    CHECK(init->spec.mode == spec.mode);
    CHECK(init->spec.staleness == spec.staleness);
    CHECK(init->spec.optimizer.kind == spec.optimizer.kind);
    CHECK(init->spec.optimizer.learning_rate == spec.optimizer.learning_rate);
    CHECK(init->spec.seed == spec.seed);
  }
  CHECK(rebuilt == flat);
}

TEST_CASE("decoders turn truncated, padded and garbage payloads into malformed_message") {
  auto spec = small_spec();
  block_layout layout(spec);
  std::vector<float> grad(layout.total_floats(), 2.0f);
  auto good = encode_push(0, 0, 0, layout, grad.data());
  for (std::size_t cut : {std::size_t{0}, std::size_t{8}, good.size_bytes() / 2, good.size_bytes() - 8}) {
    CAPTURE(cut);
    auto bad = decode_push(wire_buffer::from_bytes(good.bytes(), cut));
    REQUIRE_FALSE(bad);
    CHECK(static_cast<errc>(bad.error().code()) == errc::malformed_message);
  }
  std::vector<uint8_t> padded(good.bytes(), good.bytes() + good.size_bytes());
  padded.resize(padded.size() + 64, 0);
  CHECK_FALSE(decode_push(wire_buffer::from_bytes(padded.data(), padded.size())));
  std::vector<uint8_t> garbage(512, 0xab);
  CHECK_FALSE(decode_shard_parameters(wire_buffer::from_bytes(garbage.data(), garbage.size())));
  CHECK_FALSE(decode_shard_init(wire_buffer::from_bytes(garbage.data(), garbage.size())));
}

TEST_CASE("wire_buffer crosses CAF's serializer as one bulk byte copy") {
  caf::actor_system_config cfg;
  register_message_types(cfg);
  caf::actor_system sys{cfg};
  auto spec = small_spec();
  block_layout layout(spec);
  auto grad = iota_floats(layout.total_floats(), 1.0f);
  auto original = encode_push(1, 2, 0, layout, grad.data());

  std::vector<char> bytes;
  caf::binary_serializer sink{sys, bytes};
  REQUIRE_FALSE(sink(original));
  // A sequence length plus the payload itself: no per-element framing.
  CHECK(bytes.size() <= original.size_bytes() + 10);

  wire_buffer copy;
  caf::binary_deserializer source{sys, bytes};
  REQUIRE_FALSE(source(copy));
  REQUIRE(copy.size_bytes() == original.size_bytes());
  CHECK(std::equal(copy.bytes(), copy.bytes() + copy.size_bytes(), original.bytes()));

  // A length that is not a whole number of words is refused, not trusted.
  std::vector<char> odd;
  caf::binary_serializer odd_sink{sys, odd};
  std::string seven = "1234567";
  REQUIRE_FALSE(odd_sink(seven));
  wire_buffer refused;
  caf::binary_deserializer odd_source{sys, odd};
  CHECK(odd_source(refused));
}

TEST_CASE("a spec's sparse tables round-trip, and an invalid table is refused by the decoder") {
  train_spec spec;
  spec.model = mlp_model({4, 3, 2});
  spec.shards = 1;
  sparse_table_config ftrl;
  ftrl.dim = 1;
  ftrl.admit_after = 3;
  ftrl.optimizer.kind = row_optimizer_kind::ftrl;
  ftrl.optimizer.learning_rate = 0.125f;
  ftrl.optimizer.l1 = 0.5f;
  ftrl.optimizer.l2 = 0.25f;
  sparse_table_config embedding;
  embedding.dim = 16;
  embedding.init = row_init::normal;
  embedding.scale = 0.01f;
  embedding.optimizer.kind = row_optimizer_kind::adam;
  embedding.optimizer.beta2 = 0.99f;
  spec.model.sparse_tables = {{"wide/weights", ftrl}, {"embedding/user", embedding}};
  spec.shards = 3;
  place_buckets(spec);
  block_layout layout(spec);
  std::vector<float> part(layout.shard_floats(0), 1.0f);
  auto init = decode_shard_init(encode_shard_init(spec, 0, layout, part.data()));
  REQUIRE(init);
  CHECK(init->spec.bucket_shards == spec.bucket_shards);  // 4096 buckets, round robin
  REQUIRE(init->spec.bucket_shards.size() == 4096);
  CHECK(init->spec.bucket_shards[4095] == 4095 % 3);
  const auto& got = init->spec.model.sparse_tables;
  REQUIRE(got.size() == 2);
  CHECK(got[0].name == "wide/weights");
  CHECK(got[0].config.dim == 1);
  CHECK(got[0].config.admit_after == 3);
  CHECK(got[0].config.optimizer.kind == row_optimizer_kind::ftrl);
  CHECK(got[0].config.optimizer.learning_rate == 0.125f);
  CHECK(got[0].config.optimizer.l1 == 0.5f);
  CHECK(got[0].config.optimizer.l2 == 0.25f);
  CHECK(got[1].name == "embedding/user");
  CHECK(got[1].config.dim == 16);
  CHECK(got[1].config.init == row_init::normal);
  CHECK(got[1].config.scale == 0.01f);
  CHECK(got[1].config.optimizer.kind == row_optimizer_kind::adam);
  CHECK(got[1].config.optimizer.beta2 == 0.99f);

  spec.model.sparse_tables[1].config.dim = 0;  // what a hostile or broken peer might send
  auto refused = decode_shard_init(encode_shard_init(spec, 0, layout, part.data()));
  REQUIRE(!refused);
  CHECK(static_cast<errc>(refused.error().code()) == errc::invalid_spec);
  CHECK(describe(refused.error()).find("sparse table embedding/user: dim must be at least 1")
        != std::string::npos);
  spec.model.sparse_tables[1].name = "dense0/kernel";  // a tensor's name
  spec.model.sparse_tables[1].config.dim = 4;
  CHECK(invalid_model(spec.model) == "two tensors or tables are named 'dense0/kernel'");
  spec.model.sparse_tables[1].name = "embedding/user";
  spec.bucket_shards[7] = 3;  // a shard the run does not have
  auto misplaced = decode_shard_init(encode_shard_init(spec, 0, layout, part.data()));
  REQUIRE(!misplaced);
  CHECK(describe(misplaced.error()).find("bucket 7 is placed on shard 3 of 3") != std::string::npos);
}

TEST_CASE("a spec's dense placement round-trips, and one naming a missing shard is refused") {
  train_spec spec;
  spec.model = mlp_model({9, 7, 5});
  spec.block_floats = 6;
  spec.shards = 2;
  const auto blocks = block_layout(spec).blocks().size();
  spec.block_shards.assign(blocks, 1);  // all on shard 1: a placement no rule would give
  spec.block_shards[0] = 0;
  block_layout layout(spec);
  REQUIRE(layout.shard_blocks(0) == std::vector<uint32_t>{0});
  std::vector<float> part(layout.shard_floats(1), 1.0f);
  auto init = decode_shard_init(encode_shard_init(spec, 1, layout, part.data()));
  REQUIRE(init);
  CHECK(init->spec.block_shards == spec.block_shards);
  CHECK(init->blocks.size() == blocks - 1);
  spec.block_shards.clear();  // empty stays empty: the largest-first rule
  auto lpt = decode_shard_init(encode_shard_init(spec, 1, layout, part.data()));
  REQUIRE(lpt);
  CHECK(lpt->spec.block_shards.empty());
  spec.block_shards.assign(blocks, 2);  // a shard the run does not have
  auto misplaced = decode_shard_init(encode_shard_init(spec, 1, layout, part.data()));
  REQUIRE(!misplaced);
  CHECK(describe(misplaced.error()).find("block 0 is placed on shard 2 of 2") != std::string::npos);
}
