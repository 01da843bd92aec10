// A shard (shard_fixture.hpp) served by a data link server on 127.0.0.1, plain or over mutual
// TLS, for the data link tests; the server's log lines are sent to the fixture's scoped actor, so
// a test can wait for one without sleeping.
#pragma once

#include "actors/deploy/remote_shard.hpp"
#include "actors/link/reply_part.hpp"
#include "actors/link/shard_link_server.hpp"
#include "loopback_connect.hpp"
#include "shard_fixture.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace actorps::test {

using line_atom = caf::atom_constant<caf::atom("line")>;

inline constexpr auto link_request_timeout = std::chrono::milliseconds(10000);

/// The three paths of a data link, for tests that run over each.
enum class link_path { tcp, socket, shm };
inline constexpr link_path every_link_path[] = {link_path::tcp, link_path::socket, link_path::shm};
inline const char* transport_of(link_path p) {
  return p == link_path::tcp ? "tcp" : p == link_path::socket ? "local socket" : "shared memory";
}

struct link_fixture : shard_fixture {
  std::unique_ptr<shard_link_server> server;

  /// `server_tls` enabled: every connection must be mutual TLS with those files.
  explicit link_fixture(train_spec s, const tls_files& server_tls = {}, link_limits limits = {},
                        shard_config config = {})
    : shard_fixture(std::move(s), std::move(config)) {
    caf::actor me = caf::actor_cast<caf::actor>(*self);
    auto listening = shard_link_server::listen(
      "127.0.0.1", 0, [me](const std::string& line) { caf::anon_send(me, line_atom::value, line); },
      limits, server_tls);
    REQUIRE(listening);
    server = std::move(*listening);
    server->serve(*sys, shard, 0);
  }
  ~link_fixture() { server.reset(); }

  /// Connects over TCP or the local socket and introduces itself as a client of shard `index`,
  /// over TLS with `client_tls` when enabled.
  caf::expected<remote_shard> try_attach(bool local, int32_t index = 0,
                                         const tls_files& client_tls = {}) {
    auto link = local ? connect_local_link(server->local_name())
                      : connect_link("127.0.0.1", server->port(), link_request_timeout);
    REQUIRE(link);
    return attach_link(*sys, shard, std::move(*link), index, link_request_timeout, client_tls);
  }
  /// Over `path`: TCP, the local socket, or the local socket with shared memory.
  caf::expected<remote_shard> try_attach_over(link_path path, int32_t index = 0) {
    auto link = path == link_path::tcp
                  ? connect_link("127.0.0.1", server->port(), link_request_timeout)
                  : connect_local_link(server->local_name());
    REQUIRE(link);
    return attach_link(*sys, shard, std::move(*link), index, link_request_timeout, {},
                       path == link_path::shm);
  }
  remote_shard attach_over(link_path path, int32_t index = 0) {
    auto remote = try_attach_over(path, index);
    REQUIRE(remote);
    return *remote;
  }
  remote_shard attach(bool local, int32_t index = 0) {
    auto remote = try_attach(local, index);
    REQUIRE(remote);
    return *remote;
  }

  /// The server's next log line other than the one naming each link's path at its first
  /// request ("serving a data link from ... over ..."), "" after the timeout.
  std::string next_log_line() {
    for (;;) {
      std::string line;
      (*self)->receive([&](line_atom, std::string& l) { line = std::move(l); },
                       caf::after(timeout) >> [] {});
      if (line.rfind("serving a data link", 0) != 0) return line;
    }
  }
};

/// Layers 4-4-`outputs` in blocks of 4 floats: every block is a whole number of words and
/// starts on one, so every block of a push or reply can be a segment of its own (tiny_spec's
/// 3-float bias cannot).
inline train_spec word_aligned_spec(int outputs = 2) {
  auto spec = tiny_spec(consistency::async, 1);
  spec.model = mlp_model({4, 4, outputs});
  return spec;
}

/// Layers 128-128-32 in blocks of 1024 floats (23 blocks, every one on a word): a reply of
/// 81 KiB, which parts of 8 KiB (two blocks of 4 KiB) cut into 11. Parameters of 64 KiB and more are allocated in
/// the process's arena (link_memory.hpp) once it exists, so shared memory names them.
inline train_spec parted_spec() {
  auto spec = tiny_spec(consistency::async, 1);
  spec.model = mlp_model({128, 128, 32});
  spec.block_floats = 1024;
  return spec;
}

inline link_limits small_parts() {
  link_limits limits;
  limits.reply_part_bytes = 8 * 1024;
  return limits;
}

inline bool same_floats(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

/// A gradient of `value` everywhere but the last block's first value, `last`.
inline wire_buffer push_with_last(const block_layout& layout, int64_t clock, float value, float last) {
  std::vector<float> grad(layout.total_floats(), value);
  grad[layout.blocks().back().offset] = last;
  return encode_push(0, clock, 0, layout, grad.data());
}


/// A bare link_socket to the fixture's server that has said hello (no proxy, no reader thread).
inline std::shared_ptr<link_socket> raw_link(link_fixture& f, bool local);

/// Says hello to shard 0 on `link`, asking for requests to time out after `timeout`.
inline void say_hello(link_socket& link,
                      std::chrono::milliseconds timeout = link_request_timeout) {
  link.set_receive_timeout(link_request_timeout);
  REQUIRE_FALSE(link.send(make_header(frame_kind::hello, 0, 0, timeout.count())));
  frame_header h;
  REQUIRE_FALSE(link.receive_header(h));
  REQUIRE(static_cast<frame_kind>(h.kind) == frame_kind::reply);
}

inline std::shared_ptr<link_socket> raw_link(link_fixture& f, bool local) {
  auto link = local ? connect_local_link(f.server->local_name())
                    : connect_link("127.0.0.1", f.server->port(), link_request_timeout);
  REQUIRE(link);
  say_hello(**link);
  return *link;
}

/// A stranger's connection to the link server at 127.0.0.1:`port` (receives give up after 10 s).
inline int stranger_to(uint16_t port) { return connect_loopback(port); }

/// The same bytes on the wire (a reply built by reference, flattened, against one received).
/// Bytes of the structure (segment table and segment 0) of a push and of a reply built by
/// reference on `layout`: what a shared-memory link copies of a message whose blocks it names.
inline std::size_t push_structure_bytes(const block_layout& layout) {
  std::vector<float> zeros(layout.total_floats(), 0.0f);
  return encode_push_by_reference(0, 0, 0, layout, zeros.data()).pieces().front().bytes;
}
inline std::size_t reply_structure_bytes(const block_layout& layout) {
  std::vector<float> zeros(layout.total_floats(), 0.0f);
  return encode_shard_parameters_by_reference(0, 0, -1, layout, zeros.data(), nullptr)
    .pieces().front().bytes;
}

inline bool same_bytes(const wire_buffer& x, const wire_buffer& y) {
  auto a = x.flat(), b = y.flat();
  return a.size_bytes() == b.size_bytes() && std::memcmp(a.bytes(), b.bytes(), a.size_bytes()) == 0;
}

/// Pushes clocks [first, first + count) of worker 0, gradient 0.25·(clock + 1), through
/// `remote` (over the link of `link`) and straight to `direct`: both must answer the same bytes.
inline void check_pushes_as_in_process(link_fixture& link, const ps_shard_actor& remote,
                                       shard_fixture& direct, int64_t first, int64_t count) {
  for (int64_t clock = first; clock < first + count; ++clock) {
    auto via_link = link.ask(remote, push_pull_atom::value,
                             push_request{link.push_of(0, clock, 0.25f * float(clock + 1))});
    auto in_process = direct.ask(direct.shard, push_pull_atom::value,
                                 push_request{direct.push_of(0, clock, 0.25f * float(clock + 1))});
    REQUIRE(via_link);
    REQUIRE(in_process);
    CHECK(same_bytes(*via_link, *in_process));
  }
}

// --- a push sent in runs, as a slow sender does (request_progress.hpp) --------------------

/// Parts of 8 KiB both ways: the 81 KiB push of parted_spec is handed on once 8 KiB are in,
/// and its reply goes ahead every two blocks.
inline link_limits small_runs() {
  auto limits = small_parts();
  limits.request_part_bytes = 8 * 1024;
  return limits;
}

/// A worker's push as it leaves a worker (built by reference: its structure in segment 0, each
/// block a segment of its own), flattened: the bytes on the wire.
inline wire_buffer wire_push(const block_layout& layout, int64_t clock, float value,
                      float last = std::numeric_limits<float>::quiet_NaN()) {
  std::vector<float> grad(layout.total_floats(), value);
  if (!std::isnan(last)) grad[layout.blocks().back().offset] = last;
  return encode_push_by_reference(0, clock, 0, layout, grad.data()).flat();
}

/// Where a push is cut in two runs: its middle, on a word.
inline std::size_t half_of(const wire_buffer& push) { return push.size_bytes() / 2 / 8 * 8; }

/// Sends the header of `push` and its first `first` bytes (a multiple of 8) as request `id`.
inline void send_first(link_socket& link, uint64_t id, const wire_buffer& push, std::size_t first) {
  auto h = make_header(frame_kind::push_pull, id, 0, 0, push.size_bytes());
  REQUIRE_FALSE(link.send(h));
  REQUIRE_FALSE(link.send_bytes(push.bytes(), first));
}

inline void send_rest(link_socket& link, const wire_buffer& push, std::size_t first) {
  REQUIRE_FALSE(link.send_bytes(push.bytes() + first, push.size_bytes() - first));
}

/// The next header, which must be a part of the reply to `id`: the shard applied a block of a
/// push it has not all of yet.
inline frame_header first_part(link_socket& link, uint64_t id) {
  frame_header h;
  REQUIRE_FALSE(link.receive_header(h));
  REQUIRE(kind_of(h.kind) == frame_kind::reply_part);
  REQUIRE(h.id == id);
  return h;
}

/// Sends `push` as request `id` in two runs, the second once the first reply part has come
/// back (so the shard applied blocks of a push it had half of), and receives the reply into
/// `params`.
inline caf::expected<shard_parameters_view> push_in_two_runs(link_socket& link, uint64_t id,
                                                      const wire_buffer& push,
                                                      const block_layout& layout,
                                                      std::vector<float>& params) {
  const auto half = half_of(push);
  send_first(link, id, push, half);
  auto h = first_part(link, id);
  send_rest(link, push, half);
  wire_buffer structure;
  return receive_reply_into(link, h, layout, params.data(), structure);
}

/// Worker 0's push of clock 0 sent on `raw` in two runs (push_in_two_runs): its reply must
/// land byte-identical to `direct`'s for the same push, once streamed.
inline caf::expected<shard_parameters_view> check_two_runs_as_direct(link_socket& raw,
                                                                     link_fixture& link,
                                                                     shard_fixture& direct) {
  std::vector<float> params(link.layout.total_floats(), -1.0f);
  auto view = push_in_two_runs(raw, 7, wire_push(link.layout, 0, 0.5f), link.layout, params);
  REQUIRE(view);
  auto expected = direct.push_pull(wire_push(direct.layout, 0, 0.5f));
  REQUIRE(expected);
  CHECK(same_floats(params, *expected));
  CHECK(same_floats(link.snapshot(), *expected));
  CHECK(link.stats().pushes_streamed == 1);
  return view;
}

} // namespace actorps::test
