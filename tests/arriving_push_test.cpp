// A push read from its first bytes (actors/protocol/arriving_push.hpp): what a worker sends is
// read as its whole decode reads it; nothing past the bytes that are in changes what is read.
#include "actors/protocol/arriving_push.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <doctest/doctest.h>

#include "schema/actorps.capnp.h"

#include <cstring>
#include <numeric>
#include <vector>

using namespace actorps;

namespace {

/// Dense blocks of 8 floats on two shards: shard 0's blocks are each a segment of their own in
/// a push built by reference.
train_spec two_shards() {
  train_spec s;
  s.model.name = "arriving";
  s.model.tensors = {{"dense/kernel", {6, 4}, tensor_init::uniform, 0.1},
                     {"dense/bias", {4}, tensor_init::zeros, 0}};
  s.block_floats = 8;
  s.shards = 2;
  s.workers = 2;
  return s;
}

/// `whole`'s bytes with those from `arrived` on overwritten by `fill`: what a buffer still being
/// written may hold there.
wire_buffer with_late_bytes(const wire_buffer& whole, std::size_t arrived, uint8_t fill) {
  auto copy = wire_buffer::from_bytes(whole.bytes(), whole.size_bytes());
  std::memset(const_cast<uint8_t*>(copy.bytes()) + arrived, fill, copy.size_bytes() - arrived);
  return copy;
}

/// A push whose root struct lies in segment 1: a hand-made message (a worker's has its structure
/// in segment 0).
wire_buffer root_in_segment_one() {
  // Segments of 1 word each: segment 0 holds the root pointer alone, the struct goes to the next.
  capnp::MallocMessageBuilder mb(1, capnp::AllocationStrategy::FIXED_SIZE);
  auto push = mb.initRoot<wire::Push>();
  push.setWorker(1);
  push.setClock(3);
  auto blocks = push.initBlocks(1);
  blocks[0].setId(0);
  blocks[0].initValues(32);
  auto flat = capnp::messageToFlatArray(mb);
  return wire_buffer::from_bytes(flat.begin(), flat.size() * sizeof(capnp::word));
}

} // namespace

TEST_CASE("a worker's push read from its first bytes is its whole decode, blocks where their "
          "values arrive") {
  auto spec = two_shards();
  block_layout layout(spec);
  std::vector<float> grad(layout.total_floats());
  std::iota(grad.begin(), grad.end(), 1.0f);
  auto push = encode_push_by_reference(1, 3, 0, layout, grad.data(), {}, 2).flat();
  const auto head = arrived_structure(push, push.size_bytes());
  REQUIRE(head > 0);
  REQUIRE(head < push.size_bytes());
  CHECK(arrived_structure(push, head - sizeof(capnp::word)) == 0);
  CHECK_FALSE(read_arriving_push(push, head - sizeof(capnp::word)));

  // Only the structure in: whatever the rest of the buffer holds, the same push is read.
  for (uint8_t fill : {0x00, 0xff, 0x5a}) {
    CAPTURE(int(fill));
    auto partly = with_late_bytes(push, head, fill);
    auto got = read_arriving_push(partly, head);
    REQUIRE(got);
    auto whole = decode_push(push);
    REQUIRE(whole);
    CHECK(got->push.worker == 1);
    CHECK(got->push.clock == 3);
    CHECK(got->push.incarnation == 2);
    REQUIRE(got->push.blocks.size() == whole->blocks.size());
    REQUIRE(got->ends.size() == whole->blocks.size());
    for (std::size_t i = 0; i < whole->blocks.size(); ++i) {
      const auto& b = whole->blocks[i];
      auto offset = reinterpret_cast<const uint8_t*>(b.values) - push.bytes();
      CHECK(got->push.blocks[i].id == b.id);
      CHECK(got->push.blocks[i].count == b.count);
      CHECK(reinterpret_cast<const uint8_t*>(got->push.blocks[i].values) - partly.bytes()
            == offset);
      CHECK(got->ends[i] == offset + b.count * sizeof(float));
      CHECK(got->ends[i] > head);  // each block is a later segment, not yet in
    }
    CHECK(got->ends.back() == push.size_bytes());
    // Whole, the copy holds the worker's bytes again and reads the same.
    std::memcpy(const_cast<uint8_t*>(partly.bytes()), push.bytes(), push.size_bytes());
    CHECK_FALSE(check_read_early(got->push, partly));
  }
}

TEST_CASE("a push whose root lies past its first segment reads as empty from its first bytes, "
          "and is told apart once whole") {
  auto push = root_in_segment_one();
  const auto head = arrived_structure(push, push.size_bytes());
  REQUIRE(head > 0);
  auto whole = decode_push(push);
  REQUIRE(whole);
  REQUIRE(whole->worker == 1);
  for (uint8_t fill : {0x00, 0xff}) {
    auto got = read_arriving_push(with_late_bytes(push, head, fill), head);
    REQUIRE(got);  // read from the stand-ins, not from the bytes still arriving
    CHECK(got->push.worker == 0);
    CHECK(got->push.clock == 0);
    CHECK(got->push.blocks.empty());
  }
  auto got = read_arriving_push(push, head);
  REQUIRE(got);
  auto err = check_read_early(got->push, push);
  CHECK(err == make_error(errc::malformed_message));
  CHECK(describe(err).find("differs from what its first bytes said") != std::string::npos);
}

TEST_CASE("a push that cannot be read as it arrives is left to be read whole: one segment, "
          "bf16, bytes after its segments") {
  auto spec = two_shards();
  block_layout layout(spec);
  std::vector<float> grad(layout.total_floats(), 0.5f);
  auto copied = encode_push(1, 3, 0, layout, grad.data());  // one segment
  CHECK(arrived_structure(copied, copied.size_bytes()) == 0);
  CHECK_FALSE(read_arriving_push(copied, copied.size_bytes()));

  // bf16 as two segments: what push_precision refused before (its values are widened whole).
  // Segment 0 holds its root and block list; the values do not fit in it.
  capnp::MallocMessageBuilder mb(16, capnp::AllocationStrategy::FIXED_SIZE);
  auto bf16 = mb.initRoot<wire::Push>();
  bf16.setPrecision(wire::WirePrecision::BF16);
  bf16.initBlocks(1)[0].initValues(256);
  auto flat = capnp::messageToFlatArray(mb);
  auto two = wire_buffer::from_bytes(flat.begin(), flat.size() * sizeof(capnp::word));
  REQUIRE(arrived_structure(two, two.size_bytes()) > 0);
  REQUIRE(decode_push(two));
  CHECK_FALSE(read_arriving_push(two, two.size_bytes()));

  // A word more than the segment table says: the whole decode refuses trailing bytes.
  auto by_reference = encode_push_by_reference(1, 3, 0, layout, grad.data()).flat();
  std::vector<uint8_t> longer(by_reference.bytes(), by_reference.bytes() + by_reference.size_bytes());
  longer.resize(longer.size() + sizeof(capnp::word));
  auto trailing = wire_buffer::from_bytes(longer.data(), longer.size());
  CHECK_FALSE(decode_push(trailing));
  CHECK(read_arriving_push(by_reference, by_reference.size_bytes()));
  CHECK_FALSE(read_arriving_push(trailing, trailing.size_bytes()));
}
