// The data link between a worker and a shard in another process (remote_shard.hpp,
// shard_link_server.hpp), exercised inside one process over real sockets: the same bytes as
// asking the shard directly, the shard's own errors, held pulls, strangers, a lost shard.
#include "link_fixture.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

using namespace actorps;
using namespace actorps::test;

namespace {

constexpr auto request_timeout = link_request_timeout;

} // namespace

TEST_CASE("data link: pull, push_pull and snapshot give the shard's own bytes over TCP, the local socket and shared memory") {
  // Two identical async shards: `link` is asked over the data link, `direct` as in one process.
  auto spec = tiny_spec(consistency::async, 1);
  for (auto path : every_link_path) {
    CAPTURE(transport_of(path));
    link_fixture link{spec};
    shard_fixture direct{spec};
    auto remote = link.attach_over(path);
    CHECK(remote.link->is_local() == (path != link_path::tcp));
    CHECK(remote.transport() == std::string(transport_of(path)));
    auto pulled = link.ask(remote.handle, pull_atom::value, int32_t{0}, int64_t{0});
    auto expected = direct.ask(direct.shard, pull_atom::value, int32_t{0}, int64_t{0});
    REQUIRE(pulled);
    REQUIRE(expected);
    CHECK(same_bytes(*pulled, *expected));
    // Each request read from the link makes the asker, then the shard, ready on the loop's own
    // execution unit (loop_execution_unit.hpp): at least two guest turns on the loop a request.
    auto turns = link.server->loop_turns();
    check_pushes_as_in_process(link, remote.handle, direct, 0, 4);
    CHECK(link.server->loop_turns() >= turns + 2 * 4);
    auto snap = link.ask(remote.handle, snapshot_atom::value);
    REQUIRE(snap);
    CHECK(link.parameters_of(*snap) == direct.snapshot());
    // Control messages reach the shard itself.
    (*link.self)->request(remote.handle, timeout, stats_atom::value)
      .receive([&](shard_stats& s) { CHECK(s.pushes == 4); },
               [&](caf::error& err) { FAIL(describe(err)); });
    // A message sent to the shard by anyone but the loop runs on CAF's scheduler: no turn.
    turns = link.server->loop_turns();
    CHECK(link.stats().pushes == 4);
    CHECK(link.server->loop_turns() == turns);
    remote.close();
  }
}

TEST_CASE("data link: a refused push comes back as the shard's own error and the link keeps serving") {
  link_fixture link{tiny_spec(consistency::async, 1)};
  auto remote = link.attach(false);
  std::vector<float> grad(link.layout.total_floats(), 0.5f);
  grad[3] = std::numeric_limits<float>::quiet_NaN();
  auto refused = link.ask(remote.handle, push_pull_atom::value,
                          push_request{encode_push(0, 0, 0, link.layout, grad.data())});
  REQUIRE_FALSE(refused);
  CHECK(refused.error() == make_error(errc::non_finite_value));
  CHECK(refused.error().category() == error_category);
  auto garbage = link.ask(remote.handle, push_pull_atom::value, push_request{wire_buffer::from_bytes("garbage!", 8)});
  REQUIRE_FALSE(garbage);
  CHECK(garbage.error() == make_error(errc::malformed_message));
  // The same link still serves, and nothing was applied by the refused pushes.
  auto ok = link.ask(remote.handle, push_pull_atom::value, push_request{link.push_of(0, 0, 1.0f)});
  REQUIRE(ok);
  auto params = link.parameters_of(*ok);
  for (std::size_t i = 0; i < params.size(); ++i) CHECK(params[i] == doctest::Approx(link.initial[i] - 1.0f));
  CHECK(link.stats().dropped == 2);
  remote.close();
}

TEST_CASE("data link: a pull held by the consistency rule is answered over the link once the other worker pushes") {
  // sync, 2 workers: worker 0's push_pull over the link can only be answered after worker 1's
  // push (sent straight to the shard); whichever arrives second is answered at once.
  for (auto path : every_link_path) {
    CAPTURE(transport_of(path));
    link_fixture link{tiny_spec(consistency::sync, 2)};
    auto remote = link.attach_over(path);
    caf::actor me = caf::actor_cast<caf::actor>(*link.self);
    auto push0 = link.push_of(0, 0, 1.0f);
    auto asker = link.sys->spawn([=](caf::event_based_actor* a) {
      a->request(remote.handle, timeout, push_pull_atom::value, push_request{push0})
        .then([=](const wire_buffer& reply) { a->send(me, reply); },
              [=](caf::error& err) { a->send(me, err); });
    });
    auto direct = link.ask(link.shard, push_pull_atom::value, push_request{link.push_of(1, 0, 3.0f)});
    REQUIRE(direct);
    wire_buffer via_link;
    (*link.self)->receive([&](wire_buffer& reply) { via_link = std::move(reply); },
                          [&](caf::error& err) { FAIL(describe(err)); },
                          caf::after(timeout) >> [] { FAIL("no reply over the link"); });
    // Both are the parameters after the one averaged update: lr 1, mean gradient 2.
    auto params = link.parameters_of(via_link);
    CHECK(params == link.parameters_of(*direct));
    for (std::size_t i = 0; i < params.size(); ++i) CHECK(params[i] == doctest::Approx(link.initial[i] - 2.0f));
    CHECK(link.stats().pulls_held == 1);
    remote.close();
  }
}

TEST_CASE("data link: a pull held past the client's request timeout is answered with request_timeout by the server, its late answer dropped, the link goes on") {
  // sync, 2 workers: worker 0's push_pull of clock 0 (its pull of clock 1) waits for worker 1's
  // push. The client's hello says its requests time out after 1 s; the server (not CAF's
  // clock) holds that.
  for (bool local : {false, true}) {
    CAPTURE(local);
    link_fixture link{tiny_spec(consistency::sync, 2)};
    auto raw = local ? connect_local_link(link.server->local_name())
                     : connect_link("127.0.0.1", link.server->port(), request_timeout);
    REQUIRE(raw);
    auto& l = **raw;
    l.set_receive_timeout(request_timeout);
    frame_header h;
    REQUIRE_FALSE(l.send(make_header(frame_kind::hello, 0, 0, 1000)));
    REQUIRE_FALSE(l.receive_header(h));
    REQUIRE(static_cast<frame_kind>(h.kind) == frame_kind::reply);
    auto sent = std::chrono::steady_clock::now();
    REQUIRE_FALSE(l.send(frame_kind::push_pull, 1, link.push_of(0, 0, 1.0f)));
    REQUIRE_FALSE(l.receive_header(h));
    auto waited = std::chrono::steady_clock::now() - sent;
    CHECK(h.id == 1);
    REQUIRE(static_cast<frame_kind>(h.kind) == frame_kind::failure);
    caf::error carried;
    REQUIRE_FALSE(l.receive_failure(h, carried));
    CHECK(carried == caf::sec::request_timeout);
    CHECK(waited >= std::chrono::milliseconds(1000));
    CHECK(link.stats().pulls_held == 1);
    // Worker 1 pushes clock 0: the shard applies the mean and answers the held pull, whose
    // answer the server drops (it timed out); a snapshot asked next is the next frame.
    REQUIRE(link.ask(link.shard, push_pull_atom::value, push_request{link.push_of(1, 0, 3.0f)}));
    REQUIRE_FALSE(l.send(make_header(frame_kind::snapshot, 2)));
    REQUIRE_FALSE(l.receive_header(h));
    CHECK(h.id == 2);
    REQUIRE(static_cast<frame_kind>(h.kind) == frame_kind::reply);
    auto reply = l.receive_buffer(h);
    REQUIRE(reply);
    // lr 1, mean gradient 2: the held push was applied although its answer was dropped.
    auto params = link.parameters_of(*reply);
    REQUIRE(params.size() == link.initial.size());
    for (std::size_t i = 0; i < params.size(); ++i)
      CHECK(params[i] == doctest::Approx(link.initial[i] - 2.0f));
    l.shutdown();
  }
}

TEST_CASE("data link: strangers, a peer of another frame version and a client of another shard are refused and logged, the server keeps serving") {
  link_fixture link{tiny_spec(consistency::async, 1)};
  int fd = stranger_to(link.server->port());
  std::vector<char> garbage(4096, '\xff');
  REQUIRE(::send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL) > 0);
  auto line = link.next_log_line();
  CHECK(line.find("refused a data connection from 127.0.0.1:") == 0);
  CHECK(line.find("bad magic") != std::string::npos);
  char byte;
  CHECK(::recv(fd, &byte, 1, 0) <= 0);  // disconnected
  ::close(fd);

  auto link_socket = connect_link("127.0.0.1", link.server->port(), request_timeout);
  REQUIRE(link_socket);
  auto wrong = attach_link(*link.sys, link.shard, std::move(*link_socket), 3, request_timeout);
  REQUIRE_FALSE(wrong);
  CHECK(describe(wrong.error()).find("wrong_shard: this is shard 0, not 3") != std::string::npos);
  CHECK(link.next_log_line().find("it asked for shard 3") != std::string::npos);
  CHECK(link.server->refused() == 2);

  // A peer of the frame version before replies in parts (2) is refused at its hello, naming both.
  int old_peer = stranger_to(link.server->port());
  auto hello = make_header(frame_kind::hello, 0, 0, 10000);
  hello.version = 2;
  REQUIRE(::send(old_peer, &hello, sizeof hello, MSG_NOSIGNAL) == sizeof hello);
  CHECK(link.next_log_line().find("data frame version 2, expected 4") != std::string::npos);
  CHECK(::recv(old_peer, &byte, 1, 0) <= 0);
  ::close(old_peer);
  CHECK(link.server->refused() == 3);

  auto remote = link.attach(false);
  CHECK(link.ask(remote.handle, push_pull_atom::value, push_request{link.push_of(0, 0, 1.0f)}));
  remote.close();
}

TEST_CASE("data link: once the shard's side is gone, requests fail as to a dead shard") {
  // (A shard process that dies closes its sockets the same way; the multi-process fault tests
  // kill one while workers wait on it.)
  link_fixture link{tiny_spec(consistency::async, 1)};
  auto remote = link.attach(false);
  REQUIRE(link.ask(remote.handle, push_pull_atom::value, push_request{link.push_of(0, 0, 1.0f)}));
  link.server.reset();
  auto later = link.ask(remote.handle, push_pull_atom::value, push_request{link.push_of(0, 1, 1.0f)});
  REQUIRE_FALSE(later);
  CHECK(later.error() == caf::sec::request_receiver_down);
  CHECK(describe(later.error()).find("shard 0 (data link to 127.0.0.1:") == 0);
  auto again = link.ask(remote.handle, snapshot_atom::value);
  REQUIRE_FALSE(again);
  CHECK(again.error() == caf::sec::request_receiver_down);
  remote.close();
}
