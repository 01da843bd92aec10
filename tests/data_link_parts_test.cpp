// A push_pull's reply sent ahead in parts while the shard applies the push (reply_stream.hpp,
// reply_part.hpp), over each path of the data link: the parts land in place byte-identical to
// the shard's parameters; a refusal met after some parts went is the answer (the push's error,
// or the unchanged values whole); parts that do not form the reply end the link.
#include "actors/link/reply_part.hpp"
#include "actors/protocol/link_memory.hpp"
#include "link_fixture.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <limits>
#include <optional>

using namespace actorps;
using namespace actorps::test;

namespace {

/// Lends `params` to `remote` as the worker's parameters: replies land there.
void land_in(remote_shard& remote, const block_layout& layout, std::vector<float>& params) {
  std::shared_ptr<void> unowned;
  remote.destination->set(std::shared_ptr<const block_layout>(unowned, &layout),
                          std::shared_ptr<std::vector<float>>(unowned, &params));
}

} // namespace

TEST_CASE("data link: a large push_pull's reply goes ahead in parts over TCP, the local socket and shared memory, and lands byte-identical to the shard's parameters") {
  // The arena first, as in a ps process: over shared memory each part then names the shard's
  // blocks in it rather than carrying a copy (a record of pieces).
  REQUIRE(enable_link_memory().empty());
  const auto spec = parted_spec();
  for (auto path : every_link_path) {
    CAPTURE(transport_of(path));
    link_fixture link{spec, {}, small_parts()};
    shard_fixture direct{spec};
    auto remote = link.attach_over(path);
    // Without a place: the parts make the same bytes as the reply sent whole.
    auto sent = link.server->parts_sent();
    auto reply = link.ask(remote.handle, push_pull_atom::value, push_request{link.push_of(0, 0, 0.5f)});
    auto expected = direct.ask(direct.shard, push_pull_atom::value, push_request{direct.push_of(0, 0, 0.5f)});
    REQUIRE(reply);
    REQUIRE(expected);
    CHECK(same_bytes(*reply, *expected));
    const auto parts = link.server->parts_sent() - sent;
    CHECK(parts == 11);
    // Into place: the worker's parameters, part by part.
    std::vector<float> params(link.layout.total_floats(), -1.0f);
    land_in(remote, link.layout, params);
    for (int64_t clock = 1; clock < 4; ++clock) {
      CAPTURE(clock);
      sent = link.server->parts_sent();
      auto push = link.push_of(0, clock, 0.25f * clock);
      const auto copied = copied_payload_bytes.load();
      REQUIRE(link.ask(remote.handle, push_pull_atom::value, push_request{push}));
      CHECK(link.server->parts_sent() - sent == parts);
      // Copies of ours: none over sockets; over shared memory the push into the ring, the
      // reply's structure and each part's table and head (the blocks are named in the arena),
      // and the reply's bytes out of it into `params` once.
      const auto ours = copied_payload_bytes.load() - copied;
      if (path == link_path::shm) {
        CHECK(ours >= push.size_bytes() + reply->size_bytes());
        CHECK(ours <= push.size_bytes() + reply->size_bytes()
                        + reply_structure_bytes(link.layout) + 64 * parts);
      } else {
        CHECK(ours == 0);
      }
      REQUIRE(direct.push_pull(direct.push_of(0, clock, 0.25f * clock)));
      CHECK(same_floats(params, direct.snapshot()));
    }
    CHECK(link.stats().replies_streamed == 4);
    CHECK(direct.stats().replies_streamed == 0);  // asked in its process: no stream, no parts
    remote.close();
  }
}

TEST_CASE("data link: a reply too small for two parts, a sync round and limits without parts answer whole") {
  for (auto path : every_link_path) {
    CAPTURE(transport_of(path));
    auto limits = small_parts();
    limits.reply_part_bytes = 64 * 1024;  // the reply is 81 KiB: one part and a bit
    link_fixture small{parted_spec(), {}, limits};
    auto remote = small.attach_over(path);
    REQUIRE(small.ask(remote.handle, push_pull_atom::value, push_request{small.push_of(0, 0, 0.5f)}));
    limits.reply_part_bytes = 0;
    link_fixture off{parted_spec(), {}, limits};
    auto remote_off = off.attach_over(path);
    REQUIRE(off.ask(remote_off.handle, push_pull_atom::value, push_request{off.push_of(0, 0, 0.5f)}));
    auto sync_spec = parted_spec();
    sync_spec.mode = consistency::sync;
    link_fixture sync{sync_spec, {}, small_parts()};
    auto remote_sync = sync.attach_over(path);
    REQUIRE(sync.ask(remote_sync.handle, push_pull_atom::value, push_request{sync.push_of(0, 0, 0.5f)}));
    CHECK(small.server->parts_sent() + off.server->parts_sent() + sync.server->parts_sent() == 0);
    CHECK(small.stats().replies_streamed + off.stats().replies_streamed
            + sync.stats().replies_streamed == 0);
    remote.close();
    remote_off.close();
    remote_sync.close();
  }
}

TEST_CASE("data link: a push refused at its last block after parts went ahead fails with the shard's error, changes nothing and the link goes on") {
  const auto spec = parted_spec();
  for (auto path : every_link_path) {
    CAPTURE(transport_of(path));
    link_fixture link{spec, {}, small_parts()};
    auto remote = link.attach_over(path);
    std::vector<float> params(link.layout.total_floats(), -1.0f);
    land_in(remote, link.layout, params);
    // (The first push of every 16 has its values checked in a pass of their own: clock 1 is
    // checked by the update alone, block by block.)
    REQUIRE(link.ask(remote.handle, push_pull_atom::value, push_request{link.push_of(0, 0, 1.0f)}));
    const auto before = link.snapshot();
    auto sent = link.server->parts_sent();
    auto refused = link.ask(remote.handle, push_pull_atom::value,
                            push_request{push_with_last(link.layout, 1, 0.5f,
                                           std::numeric_limits<float>::quiet_NaN())});
    REQUIRE_FALSE(refused);
    CHECK(refused.error() == make_error(errc::non_finite_value));
    CHECK(link.server->parts_sent() - sent >= 7);  // the blocks before the last went ahead
    CHECK(link.snapshot() == before);              // and nothing changed
    CHECK(link.stats().gradients_refused == 1);
    // The same link still serves, in place and byte-identical.
    REQUIRE(link.ask(remote.handle, push_pull_atom::value, push_request{link.push_of(0, 1, 1.0f)}));
    CHECK(same_floats(params, link.snapshot()));
    for (std::size_t i = 0; i < params.size(); ++i) CHECK(params[i] == link.initial[i] - 2.0f);
    remote.close();
  }
}

TEST_CASE("data link: an update refused at its last block after parts went ahead is answered with the unchanged values whole, in place") {
  auto spec = parted_spec();
  shard_config config;
  config.bounds.max_parameter = 30000.0f;  // the initial values are 0 to 20639
  for (auto path : every_link_path) {
    CAPTURE(transport_of(path));
    link_fixture link{spec, {}, small_parts(), config};
    auto remote = link.attach_over(path);
    std::vector<float> params(link.layout.total_floats(), -1.0f);
    land_in(remote, link.layout, params);
    // Every block's update is within bounds but the last one's, whose first value would reach
    // 20608 + 20000: parts of the others' new values went ahead, then the whole unchanged reply.
    auto sent = link.server->parts_sent();
    REQUIRE(link.ask(remote.handle, push_pull_atom::value,
                     push_request{push_with_last(link.layout, 0, 0.5f, -20000.0f)}));
    CHECK(link.server->parts_sent() - sent >= 7);
    CHECK(link.stats().updates_refused == 1);
    CHECK(link.snapshot() == link.initial);
    CHECK(same_floats(params, link.initial));
    // The clock counted: the next push is for clock 1, and streams whole.
    REQUIRE(link.ask(remote.handle, push_pull_atom::value, push_request{link.push_of(0, 1, 1.0f)}));
    CHECK(same_floats(params, link.snapshot()));
    CHECK(link.stats().replies_streamed == 1);
    remote.close();
  }
}

namespace {

/// A reply of `layout`'s shard 0 and the frames of its parts cut at `cuts` (byte offsets), as
/// a shard would send them, written to one end of a socketpair; the other end is read.
struct parts_pair {
  int fds[2] = {-1, -1};
  std::unique_ptr<link_socket> reader;
  parts_pair() {
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    int bytes = 1 << 20;
    ::setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    reader = std::make_unique<link_socket>(fds[0]);
    reader->set_receive_timeout(std::chrono::milliseconds(5000));
  }
  ~parts_pair() {
    if (fds[1] >= 0) ::close(fds[1]);
  }
  void send(frame_kind kind, uint64_t id, const wire_buffer& payload) {
    link_socket writer(::dup(fds[1]));
    REQUIRE_FALSE(writer.send(kind, id, payload));
  }
  /// The part [from, to) of `reply`, its head then saying `total` and `at` instead.
  void send_part(uint64_t id, const wire_buffer& reply, std::size_t from, std::size_t to,
                 std::optional<uint64_t> at = {}, std::optional<uint64_t> total = {}) {
    auto part = make_reply_part(reply, from, to).flat();
    auto* head = reinterpret_cast<uint64_t*>(const_cast<uint8_t*>(part.bytes()));
    const auto segments = uint64_t(reinterpret_cast<const uint32_t*>(head)[0]) + 1;
    const auto table_words = (segments + 2) / 2;
    if (at) head[table_words] = *at;
    if (total) head[table_words + 1] = *total;
    send(frame_kind::reply_part, id, part);
  }
  void close_writer() {
    ::close(fds[1]);
    fds[1] = -1;
  }
};

} // namespace

TEST_CASE("reply parts: a reply read part by part is the reply's bytes, and gaps, overlaps, another size, interleaved replies and a peer that stops are refused and none hangs") {
  shard_fixture shard{parted_spec()};
  const auto& layout = shard.layout;
  wire_buffer reply;
  (*shard.self)->request(shard.shard, timeout, snapshot_atom::value)
    .receive([&](wire_buffer& r) { reply = std::move(r); }, [&](caf::error& err) { FAIL(describe(err)); });
  const auto total = reply.size_bytes();
  const auto expected = shard.snapshot();
  auto read = [&](parts_pair& pair) -> caf::expected<std::vector<float>> {
    frame_header h;
    if (auto err = pair.reader->receive_header(h)) return err;
    std::vector<float> flat(layout.total_floats(), -1.0f);
    wire_buffer structure;
    auto view = receive_reply_into(*pair.reader, h, layout, flat.data(), structure);
    if (!view) return view.error();
    return flat;
  };
  {  // honest: three parts
    parts_pair pair;
    pair.send_part(1, reply, 0, 1024);
    pair.send_part(1, reply, 1024, 4096);
    pair.send_part(1, reply, 4096, total);
    auto got = read(pair);
    REQUIRE(got);
    CHECK(same_floats(*got, expected));
  }
  {  // a reply for the same request ends the parts: that reply is the answer
    parts_pair pair;
    pair.send_part(1, reply, 0, 1024);
    pair.send(frame_kind::reply, 1, reply);
    auto got = read(pair);
    REQUIRE(got);
    CHECK(same_floats(*got, expected));
  }
  struct bad {
    const char* what;
    std::function<void(parts_pair&)> send;
  };
  const bad cases[] = {
    {"a gap", [&](parts_pair& p) { p.send_part(1, reply, 0, 1024); p.send_part(1, reply, 2048, total); }},
    {"an overlap", [&](parts_pair& p) { p.send_part(1, reply, 0, 1024); p.send_part(1, reply, 512, total); }},
    {"a first part not from 0", [&](parts_pair& p) { p.send_part(1, reply, 1024, total, 1024); }},
    {"another size", [&](parts_pair& p) { p.send_part(1, reply, 0, 1024); p.send_part(1, reply, 1024, total, {}, total + 8); }},
    {"a size beyond the parts", [&](parts_pair& p) { p.send_part(1, reply, 0, 1024, {}, total + 1024); p.send_part(1, reply, 1024, total, {}, total + 1024); p.close_writer(); }},
    {"a part past the end", [&](parts_pair& p) { p.send_part(1, reply, 0, 1024, {}, 512); }},
    {"parts of two replies interleaved", [&](parts_pair& p) { p.send_part(1, reply, 0, 1024); p.send_part(2, reply, 0, 1024); }},
    {"a size not in words", [&](parts_pair& p) { p.send_part(1, reply, 0, 1024, {}, total - 4); }},
    {"a peer that stops mid-reply", [&](parts_pair& p) { p.send_part(1, reply, 0, 1024); p.close_writer(); }},
    {"a request between parts", [&](parts_pair& p) { p.send_part(1, reply, 0, 1024); p.send(frame_kind::push_pull, 1, reply); }},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    parts_pair pair;
    c.send(pair);
    auto got = read(pair);
    REQUIRE_FALSE(got);
    if (std::string(c.what) != "a peer that stops mid-reply")
      CHECK(got.error() == make_error(errc::malformed_message));
  }
}
