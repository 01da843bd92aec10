// The proxy of a shard behind a data link speaks every signature of ps_shard_actor as the shard
// does: each one asked through it, over TCP, the local socket and shared memory, answers as the
// same request asked of a shard of its own directly (the TLS path: data_link_tls_test.cpp).

#include "every_shard_signature.hpp"
#include "link_fixture.hpp"

#include <doctest/doctest.h>

using namespace actorps;
using namespace actorps::test;

TEST_CASE("shard proxy: every signature of the shard answers through it as the shard's own, over each path") {
  const auto expected = asked_of_the_shard_itself(word_aligned_spec());
  for (auto& line : expected) MESSAGE(line);
  REQUIRE(expected.size() == lines_asked);
  // What the shard answers is not all errors: the proxy's forwarding is checked on values.
  CHECK(expected[2].find("pull: parameters summing to") == 0);
  CHECK(expected[9].find("checkpoint file: shard-0.capnp of") == 0);
  for (auto path : every_link_path) {
    std::string via = transport_of(path);
    CAPTURE(via);
    scratch_dir dir;
    link_fixture f(word_aligned_spec(), {}, {}, checkpoints_into(dir.path));
    auto remote = f.attach_over(path);
    REQUIRE(remote.handle != f.shard);
    CHECK(via == remote.transport());
    auto got = ask_every_signature(f, remote.handle, dir.path);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == expected[i]);
  }
}

TEST_CASE("shard proxy: a push still arriving is refused by name, and its progress dropped") {
  link_fixture f(word_aligned_spec());
  auto remote = f.attach_over(link_path::tcp);
  std::vector<float> grad(f.layout.total_floats(), 1.0f);
  auto push = encode_push(0, 0, 0, f.layout, grad.data());
  auto progress = std::make_shared<request_progress>(push.size_bytes());
  caf::error refused;
  (*f.self)->request(remote.handle, timeout, push_pull_atom::value,
                     push_request{push, reply_stream_ptr{}, progress})
    .receive([&](wire_buffer&) {}, [&](caf::error& err) { refused = std::move(err); });
  CHECK(describe(refused).find("a push still arriving sent to a proxy") != std::string::npos);
  (*f.self)->send(remote.handle, push_pull_atom::value, push_request::more_arrived(progress));
  // Dropped, not applied: the proxy still serves, and the shard saw no push.
  auto after = f.ask(remote.handle, snapshot_atom::value);
  REQUIRE(after);
  CHECK(same_floats(f.parameters_of(*after), f.initial));
}
