// Messages built by reference (wire.hpp: encode_push_by_reference, the shard's replies): their
// blocks point at the caller's floats instead of being copied, they read as the copied messages
// do, the data link sends them with no copy of ours, and the shard's parameters do not change
// under a reply that points at them.
#include "link_fixture.hpp"

#include "actors/link/receive_in_place.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

using namespace actorps;
using namespace actorps::test;

namespace {

train_spec even_spec() { return word_aligned_spec(); }

std::vector<float> ramp(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * float(i + 1);
  return v;
}

uint64_t copied_now() { return copied_payload_bytes.load(); }

/// The bytes of `good` (a message of several segments) with segment 1 claiming `more` words
/// beyond what the message holds.
wire_buffer lying_about_segment_1(const wire_buffer& good, uint32_t more) {
  auto flat = good.flat();
  std::vector<uint32_t> words(flat.size_bytes() / 4);
  std::memcpy(words.data(), flat.bytes(), flat.size_bytes());
  REQUIRE(words[0] >= 1);  // several segments
  words[2] += more;
  return wire_buffer::from_bytes(words.data(), words.size() * 4);
}

} // namespace

TEST_CASE("wire: a push built by reference points at the gradient, copies nothing and reads as the copied push") {
  for (auto spec : {even_spec(), tiny_spec(consistency::async, 1)}) {
    block_layout layout{spec};
    auto grad = ramp(layout.total_floats(), 0.5f);
    std::size_t unaligned_bytes = 0;  // blocks that cannot be segments of their own: copied
    for (const auto& b : layout.blocks())
      if ((b.size * 4) % 8 != 0 || (b.offset * 4) % 8 != 0) unaligned_bytes += b.size * 4;
    CAPTURE(unaligned_bytes);
    auto before = copied_now();
    auto by_reference = encode_push_by_reference(3, 7, 0, layout, grad.data());
    CHECK(copied_now() - before == unaligned_bytes);
    CHECK(by_reference.is_gathered());
    auto copied = encode_push(3, 7, 0, layout, grad.data());
    CHECK(copied_now() - before == unaligned_bytes + grad.size() * 4);

    auto view = decode_push(by_reference);
    REQUIRE(view);
    CHECK(view->worker == 3);
    CHECK(view->clock == 7);
    REQUIRE(view->blocks.size() == layout.blocks().size());
    for (const auto& b : view->blocks) {
      const auto& info = layout.blocks()[b.id];
      CHECK(b.count == info.size);
      bool aligned = (info.size * 4) % 8 == 0 && (info.offset * 4) % 8 == 0;
      if (aligned) CHECK(b.values == grad.data() + info.offset);  // the gradient itself
      CHECK(std::memcmp(b.values, grad.data() + info.offset, info.size * 4) == 0);
    }
    // On the wire (flattened as a receiver holds it) it decodes to the copied push's values.
    auto received = by_reference.flat();
    CHECK(received.size_bytes() == by_reference.size_bytes());
    auto a = decode_push(received);
    auto b = decode_push(copied);
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(a->blocks.size() == b->blocks.size());
    for (std::size_t i = 0; i < a->blocks.size(); ++i) {
      CHECK(a->blocks[i].id == b->blocks[i].id);
      REQUIRE(a->blocks[i].count == b->blocks[i].count);
      CHECK(std::memcmp(a->blocks[i].values, b->blocks[i].values, a->blocks[i].count * 4) == 0);
    }
    // Cut short, the received bytes are refused, not read past their end.
    auto cut = wire_buffer::from_bytes(received.bytes(), received.size_bytes() - 16);
    auto bad = decode_push(cut);
    REQUIRE_FALSE(bad);
    CHECK(bad.error() == make_error(errc::malformed_message));
  }
}

TEST_CASE("data link: a push built by reference leaves with no copy of ours over TCP and the local socket") {
  auto spec = even_spec();
  for (bool local : {false, true}) {
    CAPTURE(local);
    link_fixture link{spec};
    auto remote = link.attach(local);
    auto grad = ramp(link.layout.total_floats(), 0.25f);
    // The whole round trip in this process: encode, send, the shard's decode and apply, its
    // reply (by reference), the link server's send and the receive: none copies a payload.
    auto before = copied_now();
    auto reply = link.ask(remote.handle, push_pull_atom::value,
                          push_request{encode_push_by_reference(0, 0, 0, link.layout, grad.data())});
    REQUIRE(reply);
    CHECK(copied_now() - before == 0);
    CHECK_FALSE(reply->is_gathered());  // received: one flat buffer
    auto values = link.parameters_of(*reply);
    for (std::size_t i = 0; i < values.size(); ++i)  // SGD, rate 1: initial - gradient
      CHECK(values[i] == link.initial[i] - grad[i]);
    remote.close();
  }
}

TEST_CASE("ps_shard: a reply built by reference keeps its values while later updates change the shard") {
  shard_fixture f{even_spec()};
  wire_buffer held;
  (*f.self)->request(f.shard, timeout, pull_atom::value, int32_t{0}, int64_t{0})
    .receive([&](const wire_buffer& reply) { held = reply; },
             [&](caf::error& err) { FAIL(describe(err)); });
  REQUIRE(held.is_gathered());  // points at the shard's parameters
  auto at_pull = f.parameters_of(held.flat());  // an independent snapshot, copied now
  CHECK(at_pull == f.initial);
  for (int64_t clock = 0; clock < 4; ++clock) {  // each update writes one of two buffers
    auto now = f.push_pull(f.push_of(0, clock, 1.0f));
    REQUIRE(now);
    CHECK((*now)[0] == f.initial[0] - float(clock + 1));
    CHECK(f.parameters_of(held) == at_pull);  // the held reply never changed
  }
}

TEST_CASE("data link: a frame whose segment table lies is counted and dropped on each path, the link goes on") {
  auto spec = even_spec();
  for (bool local : {false, true}) {
    CAPTURE(local);
    link_fixture link{spec};
    auto remote = link.attach(local);
    auto grad = ramp(link.layout.total_floats(), 0.25f);
    auto good = encode_push_by_reference(0, 0, 0, link.layout, grad.data()).flat();
    auto lying = lying_about_segment_1(good, 1000);
    auto refused = link.ask(remote.handle, push_pull_atom::value, push_request{lying});
    REQUIRE_FALSE(refused);
    CHECK(refused.error() == make_error(errc::malformed_message));
    CHECK(link.stats().dropped == 1);
    auto accepted = link.ask(remote.handle, push_pull_atom::value, push_request{good});
    REQUIRE(accepted);
    CHECK(link.stats().pushes == 1);
    remote.close();
  }
}

TEST_CASE("data link: a reply received straight into place is byte-identical to the shard's parameters") {
  for (auto spec : {even_spec(), tiny_spec(consistency::async, 1)}) {
    for (bool local : {false, true}) {
      CAPTURE(local);
      link_fixture f{spec};
      REQUIRE(f.push_pull(f.push_of(0, 0, 0.125f)));  // values that are not the initial ones
      auto link = raw_link(f, local);
      REQUIRE_FALSE(link->send(make_header(frame_kind::pull, 1, 0, 1)));
      frame_header h;
      REQUIRE_FALSE(link->receive_header(h));
      REQUIRE(static_cast<frame_kind>(h.kind) == frame_kind::reply);
      std::vector<float> flat(f.layout.total_floats(), -7.0f);
      std::size_t copied_blocks = 0;  // blocks the shard could not refer to: in segment 0
      for (const auto& b : f.layout.blocks())
        if ((b.size * 4) % 8 != 0 || (b.shard_offset * 4) % 8 != 0) copied_blocks += b.size * 4;
      wire_buffer structure;
      auto before = copied_now();
      auto view = receive_parameters_into(*link, h, f.layout, flat.data(), structure);
      REQUIRE(view);
      CHECK(copied_now() - before == copied_blocks);
      for (const auto& b : view->blocks) {  // in place: the ones the shard referred to
        const auto& info = f.layout.blocks()[b.id];
        if ((info.size * 4) % 8 == 0 && (info.shard_offset * 4) % 8 == 0)
          CHECK(b.values == flat.data() + info.offset);
      }
      auto snapshot = f.snapshot();  // the shard's parameters, asked directly over CAF
      REQUIRE(snapshot.size() == flat.size());
      CHECK(std::memcmp(flat.data(), snapshot.data(), flat.size() * 4) == 0);
      CHECK(flat[0] == f.initial[0] - 0.125f);
      link->shutdown();
    }
  }
}

TEST_CASE("data link: a copied reply is received and scattered, a lying one refused as malformed") {
  auto spec = even_spec();
  block_layout layout{spec};
  auto values = ramp(layout.total_floats(), 1.5f);
  auto send_over_pair = [&](const wire_buffer& payload, std::vector<float>& flat) {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    link_socket writer{fds[0]}, reader{fds[1]};
    REQUIRE_FALSE(writer.send(frame_kind::reply, 1, payload));
    frame_header h;
    REQUIRE_FALSE(reader.receive_header(h));
    wire_buffer structure;
    return receive_parameters_into(reader, h, layout, flat.data(), structure);
  };
  // One segment (the encoder that copies): received whole, scattered (one copy, counted).
  std::vector<float> flat(values.size(), 0.0f);
  auto before = copied_now();
  auto got = send_over_pair(encode_shard_parameters(0, 0, 0, layout, values.data()), flat);
  REQUIRE(got);
  CHECK(flat == values);
  CHECK(copied_now() - before == 2 * values.size() * 4);  // the encoder's copy and the scatter
  // By reference, but segment 1 claims more words than the frame holds: refused.
  auto good = encode_shard_parameters_by_reference(0, 0, 0, layout, values.data(), nullptr);
  std::fill(flat.begin(), flat.end(), 0.0f);
  auto lying = send_over_pair(lying_about_segment_1(good, 1), flat);
  REQUIRE_FALSE(lying);
  CHECK(lying.error() == make_error(errc::malformed_message));
}

TEST_CASE("ps_shard: a reply built by reference outlives its shard with its values") {
  auto f = std::make_unique<shard_fixture>(even_spec());
  wire_buffer held;
  (*f->self)->request(f->shard, timeout, snapshot_atom::value)
    .receive([&](const wire_buffer& reply) { held = reply; },
             [&](caf::error& err) { FAIL(describe(err)); });
  REQUIRE(held.is_gathered());
  auto expected = f->initial;
  // The shard ends (its state, and the buffer it kept its parameters in, with it).
  (*f->self)->monitor(f->shard);
  (*f->self)->send_exit(f->shard, caf::exit_reason::user_shutdown);
  bool down = false;
  (*f->self)->receive([&](caf::down_msg&) { down = true; }, caf::after(timeout) >> [] {});
  REQUIRE(down);
  // Overwrite freed memory, if it were freed: allocations of the same size reuse it.
  std::vector<std::vector<float>> churn(8, std::vector<float>(expected.size(), 1e30f));
  CHECK(f->parameters_of(held) == expected);
}
