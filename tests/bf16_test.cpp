// bfloat16 on the wire (actors/protocol/bf16.hpp): representable values survive exactly, the
// rest round to nearest with ties to even, inf and NaN stay what they are (so that a shard
// still refuses them), and a bf16 push carries half the block bytes and decodes to the
// rounded gradient.
#include "actors/protocol/bf16.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/model/mlp_plugin.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace actorps;

namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t bits_of(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

} // namespace

TEST_CASE("bf16: a value bf16 can represent survives the round trip bit for bit") {
  for (float v : {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, 3.0f * 1024, -1.0f / 64,
                  from_bits(0x7f7f0000u) /* bf16's largest */, from_bits(0x00010000u) /* a subnormal */,
                  from_bits(0x00800000u) /* the smallest normal */}) {
    CAPTURE(v);
    CHECK(bits_of(from_bf16(to_bf16(v))) == bits_of(v));
  }
  // every one of the 65536 bf16 patterns that is not a NaN widens and narrows back to itself
  int checked = 0;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    auto f = from_bf16(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ++checked;
    if (to_bf16(f) != h) FAIL("pattern " << h << " came back as " << to_bf16(f));
    CHECK(bits_of(f) == h << 16);  // widening is the shift
  }
  CHECK(checked == 65536 - 2 * 127);  // the NaNs: 127 mantissas under each sign
}

TEST_CASE("bf16 rounds to the nearest value and a tie to the even one") {
  // 1 + 2^-8 lies halfway between 1 (0x3f80, even) and 1 + 2^-7 (0x3f81): to 1.
  CHECK(to_bf16(from_bits(0x3f808000u)) == 0x3f80);
  // 1 + 3·2^-8 lies halfway between 0x3f81 (odd) and 0x3f82 (even): to 0x3f82.
  CHECK(to_bf16(from_bits(0x3f818000u)) == 0x3f82);
  CHECK(to_bf16(from_bits(0x3f808001u)) == 0x3f81);  // just above a tie: up
  CHECK(to_bf16(from_bits(0x3f807fffu)) == 0x3f80);  // just below: down
  CHECK(to_bf16(from_bits(0xbf818000u)) == 0xbf82);  // negative ties too
  CHECK(to_bf16(from_bits(0xbf80ffffu)) == 0xbf81);
  // a carry into the exponent: the largest mantissa rounds up to the next power of two
  CHECK(from_bf16(to_bf16(from_bits(0x3fffffffu))) == 2.0f);
  // 0.1 (0x3dcccccd) → 0x3dcd: the error is under half a bf16 step (2^-8 relative)
  CHECK(to_bf16(0.1f) == 0x3dcd);
  CHECK(std::fabs(from_bf16(to_bf16(0.1f)) - 0.1f) <= 0.1f * std::ldexp(1.0f, -9));
}

TEST_CASE("bf16 keeps infinities and NaNs, and rounds a float beyond its range to infinity") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(from_bf16(to_bf16(inf)) == inf);
  CHECK(from_bf16(to_bf16(-inf)) == -inf);
  CHECK(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // NaNs whose payload lies only in the dropped bits: truncated they would read as ±inf
  CHECK(std::isnan(from_bf16(to_bf16(from_bits(0x7f800001u)))));
  CHECK(std::isnan(from_bf16(to_bf16(from_bits(0xff800001u)))));
  CHECK(std::isnan(from_bf16(to_bf16(from_bits(0x7fffffffu)))));
  CHECK(from_bf16(to_bf16(std::numeric_limits<float>::max())) == inf);  // past 0x7f7f's half step
  CHECK(from_bf16(to_bf16(-std::numeric_limits<float>::max())) == -inf);
}

TEST_CASE("a bf16 push carries half the block bytes and decodes to the rounded gradient") {
  block_layout layout(mlp_model({64, 32, 10}), 512, 2);  // 2410 floats, blocks of 512 or fewer
  std::vector<float> grad(layout.total_floats());
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = std::sin(0.37f * float(i)) * 0.01f;
  for (int32_t shard = 0; shard < 2; ++shard) {
    CAPTURE(shard);
    auto fp32 = encode_push(3, 7, shard, layout, grad.data());
    auto bf16 = encode_push(3, 7, shard, layout, grad.data(), 0, {}, {}, wire_precision::bf16);
    auto floats = layout.shard_floats(shard);
    // the header and block structs are the same; each block's values take half the bytes,
    // each Data padded to whole words
    auto padded = [](std::size_t bytes) { return (bytes + 7) / 8 * 8; };
    std::size_t saved = 0;
    for (auto id : layout.shard_blocks(shard))
      saved += padded(4 * layout.blocks()[id].size) - padded(2 * layout.blocks()[id].size);
    CHECK(fp32.size_bytes() - bf16.size_bytes() == saved);
    CHECK(saved >= floats * 2 - 8 * layout.shard_blocks(shard).size());

    auto a = decode_push(fp32);
    auto b = decode_push(bf16);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->precision == wire_precision::fp32);
    CHECK(b->precision == wire_precision::bf16);
    CHECK(b->worker == 3);
    CHECK(b->clock == 7);
    REQUIRE(b->blocks.size() == a->blocks.size());
    std::size_t rounded = 0;
    for (std::size_t k = 0; k < b->blocks.size(); ++k) {
      const auto& block = layout.blocks()[b->blocks[k].id];
      REQUIRE(b->blocks[k].count == block.size);
      for (std::size_t i = 0; i < block.size; ++i) {
        auto sent = grad[block.offset + i];
        auto got = b->blocks[k].values[i];
        if (bits_of(got) != bits_of(on_the_wire(sent, wire_precision::bf16)))
          FAIL("value " << block.offset + i << ": " << got << " for " << sent);
        rounded += got != sent;
        CHECK(a->blocks[k].values[i] == sent);
      }
    }
    CHECK(rounded > floats / 2);  // sin's values are seldom bf16 already
    // a copy of the view keeps the widened values alive
    push_view copy;
    {
      auto scoped = decode_push(bf16);
      REQUIRE(scoped);
      copy = *scoped;
    }
    CHECK(copy.blocks[0].values[1] == on_the_wire(grad[layout.blocks()[copy.blocks[0].id].offset + 1],
                                                  wire_precision::bf16));
  }
}

TEST_CASE("a bf16 push keeps its sparse rows and pull keys in float32") {
  block_layout layout(mlp_model({8, 4}), 16, 1);
  std::vector<float> grad(layout.total_floats(), 0.1f);
  const std::vector<uint64_t> keys{3, 17, 40};
  const std::vector<float> rows{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};  // dim 2, not bf16 values
  sparse_rows_ref part;
  part.table = 0;
  part.dim = 2;
  part.keys = keys.data();
  part.count = keys.size();
  part.rows = rows.data();
  sparse_rows_ref next = part;
  next.rows = nullptr;
  auto push = decode_push(encode_push(0, 1, 0, layout, grad.data(), 0, {part}, {next},
                                      wire_precision::bf16));
  REQUIRE(push);
  CHECK(push->precision == wire_precision::bf16);
  CHECK(push->blocks[0].values[0] == on_the_wire(0.1f, wire_precision::bf16));
  CHECK(push->blocks[0].values[0] != 0.1f);
  REQUIRE(push->sparse.size() == 1);
  REQUIRE(push->sparse[0].value_count == rows.size());
  CHECK(std::vector<float>(push->sparse[0].values, push->sparse[0].values + rows.size()) == rows);
  REQUIRE(push->pull_keys.size() == 1);
  CHECK(push->pull_keys[0].key_count == keys.size());
  CHECK(push->pull_keys[0].keys[2] == 40);
}
