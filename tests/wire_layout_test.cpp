// Every encoder of the worker–shard exchange against the layout its early readers assume
// (actors/protocol/push_codec.hpp): the segment table is parsed here by the Cap'n Proto framing
// rules, not by the project's readers, and each message is then handed to the reader that relies
// on the layout — the shard's reader of a push still arriving, the worker's receiver of a reply
// straight into its parameters — which must take the fast path exactly where the layout allows.
#include "actors/link/receive_in_place.hpp"
#include "actors/protocol/arriving_push.hpp"
#include "actors/protocol/push_codec.hpp"

#include <capnp/common.h>
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

using namespace actorps;

namespace {

constexpr std::size_t word = sizeof(capnp::word);

/// Dense blocks of 8 floats (whole words: each can be a segment of its own) on two shards.
train_spec two_shards() {
  train_spec s;
  s.model.name = "layout";
  s.model.tensors = {{"dense/kernel", {6, 4}, tensor_init::uniform, 0.1},
                     {"dense/bias", {4}, tensor_init::zeros, 0}};
  s.block_floats = 8;
  s.shards = 2;
  s.workers = 2;
  return s;
}

/// The message's segments as the framing says: their sizes in words, from the table alone.
struct framing {
  std::size_t table_bytes = 0;
  std::vector<std::size_t> segment_words;
  std::size_t segment_start(std::size_t i) const {
    std::size_t at = table_bytes;
    for (std::size_t k = 0; k < i; ++k) at += segment_words[k] * word;
    return at;
  }
};

framing frame_of(const wire_buffer& flat) {
  framing f;
  uint32_t count = 0;
  std::memcpy(&count, flat.bytes(), 4);
  const std::size_t n = std::size_t(count) + 1;
  f.table_bytes = ((n + 2) / 2) * word;
  for (std::size_t i = 0; i < n; ++i) {
    uint32_t size = 0;
    std::memcpy(&size, flat.bytes() + 4 * (i + 1), 4);
    f.segment_words.push_back(size);
  }
  REQUIRE(f.segment_start(n) == flat.size_bytes());  // the segments fill the message
  return f;
}

/// What the layout of the fast path requires of a message of `blocks` blocks whose values are
/// `values_of(i)`: segment 0 holds the structure, segment i + 1 exactly block i's values.
void check_blocks_follow_structure(const wire_buffer& flat, const block_layout& layout,
                                   const std::vector<uint32_t>& ids, const float* values) {
  auto f = frame_of(flat);
  REQUIRE(f.segment_words.size() == 1 + ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& b = layout.blocks()[ids[i]];
    CAPTURE(i);
    CHECK(f.segment_words[1 + i] * word == b.size * sizeof(float));
    CHECK(std::memcmp(flat.bytes() + f.segment_start(1 + i), values + b.offset,
                      b.size * sizeof(float))
          == 0);
  }
}

std::vector<float> counting(std::size_t n, float from) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

/// The reply's bytes read from memory by the receiver of a reply into place.
caf::expected<shard_parameters_view> receive_from_memory(const wire_buffer& flat,
                                                         const block_layout& layout,
                                                         std::vector<float>& into,
                                                         wire_buffer& structure) {
  std::size_t at = 0;
  read_parts read = [&](iovec* parts, int count) -> caf::error {
    for (int i = 0; i < count; ++i) {
      std::memcpy(parts[i].iov_base, flat.bytes() + at, parts[i].iov_len);
      at += parts[i].iov_len;
    }
    return {};
  };
  auto got = receive_parameters_into(read, flat.size_bytes(), layout, into.data(), structure);
  CHECK(at == flat.size_bytes());
  return got;
}

} // namespace

TEST_CASE("wire layout: each push encoder, the shard's early reader takes the path it allows") {
  auto spec = two_shards();
  block_layout layout(spec);
  const auto& ids = layout.shard_blocks(0);
  auto grad = counting(layout.total_floats(), 1.0f);
  const uint64_t keys[2] = {7, 9};
  const float rows[4] = {1, 2, 3, 4};
  const std::vector<sparse_rows_ref> sparse = {{0, 2, keys, nullptr, 2, rows}};

  SUBCASE("by reference, dense: structure first, a segment per block, read as it arrives") {
    auto push = encode_push_by_reference(1, 3, 0, layout, grad.data(), {}, 2).flat();
    check_blocks_follow_structure(push, layout, ids, grad.data());
    auto f = frame_of(push);
    const auto head = f.segment_start(1);
    CHECK(arrived_structure(push, push.size_bytes()) == head);
    auto early = read_arriving_push(push, head);
    REQUIRE(early);
    CHECK_FALSE(check_read_early(early->push, push));
    REQUIRE(early->ends.size() == ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      CHECK(early->ends[i] == f.segment_start(2 + i));
  }
  SUBCASE("copied: one segment, read whole") {
    auto push = encode_push(1, 3, 0, layout, grad.data(), 2);
    CHECK(frame_of(push).segment_words.size() == 1);
    CHECK(arrived_structure(push, push.size_bytes()) == 0);
    CHECK_FALSE(read_arriving_push(push, push.size_bytes()));
    auto whole = decode_push(push);
    REQUIRE(whole);
    CHECK(whole->blocks.size() == ids.size());
  }
  SUBCASE("bf16: read whole (its blocks are widened)") {
    auto push = encode_push(1, 3, 0, layout, grad.data(), 2, {}, {}, wire_precision::bf16);
    CHECK_FALSE(read_arriving_push(push, push.size_bytes()));
    CHECK(decode_push(push));
  }
  SUBCASE("by reference with sparse rows: the rows go in segment 0, the blocks still follow") {
    auto push = encode_push_by_reference(1, 3, 0, layout, grad.data(), {}, 2, sparse, sparse)
                  .flat();
    check_blocks_follow_structure(push, layout, ids, grad.data());
    auto whole = decode_push(push);
    REQUIRE(whole);
    REQUIRE(whole->sparse.size() == 1);
    REQUIRE(whole->sparse[0].key_count == 2);
    // The rows lie inside segment 0: in by the time the structure is.
    const auto* at = reinterpret_cast<const uint8_t*>(whole->sparse[0].values);
    CHECK(at + 4 * sizeof(float) <= push.bytes() + frame_of(push).segment_start(1));
  }
}

TEST_CASE("wire layout: each reply encoder, the worker's receiver takes the path it allows") {
  auto spec = two_shards();
  block_layout layout(spec);
  const auto& ids = layout.shard_blocks(1);
  // The shard's own buffer: its blocks contiguous from 0 (shard_offset).
  std::vector<float> shard(layout.shard_floats(1));
  std::iota(shard.begin(), shard.end(), 100.0f);
  std::vector<float> expected(layout.total_floats(), -1.0f);
  for (auto id : ids) {
    const auto& b = layout.blocks()[id];
    std::memcpy(expected.data() + b.offset, shard.data() + b.shard_offset, b.size * 4);
  }

  SUBCASE("by reference: a segment per block, received in place with no copy of ours") {
    auto keep = std::make_shared<int>(0);
    auto reply =
      encode_shard_parameters_by_reference(1, 4, 3, layout, shard.data(), keep).flat();
    auto f = frame_of(reply);
    REQUIRE(f.segment_words.size() == 1 + ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto& b = layout.blocks()[ids[i]];
      CHECK(std::memcmp(reply.bytes() + f.segment_start(1 + i), shard.data() + b.shard_offset,
                        b.size * 4)
            == 0);
    }
    std::vector<float> flat(layout.total_floats(), -1.0f);
    wire_buffer structure;
    const auto before = copied_payload_bytes.load();
    auto view = receive_from_memory(reply, layout, flat, structure);
    REQUIRE(view);
    CHECK(copied_payload_bytes.load() == before);  // every block landed where it belongs
    CHECK(view->min_clock == 4);
    for (const auto& b : view->blocks)
      CHECK(b.values == flat.data() + layout.blocks()[b.id].offset);
    CHECK(flat == expected);
  }
  SUBCASE("copied: one segment, received and scattered (counted)") {
    auto reply = encode_shard_parameters(1, 4, 3, layout, shard.data());
    CHECK(frame_of(reply).segment_words.size() == 1);
    std::vector<float> flat(layout.total_floats(), -1.0f);
    wire_buffer structure;
    const auto before = copied_payload_bytes.load();
    auto view = receive_from_memory(reply, layout, flat, structure);
    REQUIRE(view);
    CHECK(copied_payload_bytes.load() > before);
    CHECK(flat == expected);
  }
}
