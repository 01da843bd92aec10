// The library loop (worker_client, actors/ps.hpp) over a data link: each call's reply lands
// straight in the caller's own output buffer (parameter_destination.hpp), so pulls and
// push_pulls copy no payload byte of ours, and the buffer holds exactly the shard's parameters.
#include "link_fixture.hpp"

#include "actors/node/cluster_core.hpp"
#include "actors/protocol/system_config.hpp"

#include <doctest/doctest.h>

#include <cstring>

using namespace actorps;
using namespace actorps::test;

namespace {

/// A cluster_core as task_cluster builds it for a worker task (shards elsewhere, a proxy per
/// shard over a data link), its one shard served by a link server in the same actor system.
struct linked_core {
  std::shared_ptr<detail::cluster_core> core = std::make_shared<detail::cluster_core>();
  std::unique_ptr<shard_link_server> server;
  remote_shard remote;
  ps_shard_actor shard;

  linked_core(const train_spec& spec, bool local, bool in_place) {
    configure_system(core->cfg, 2);
    core->sys = std::make_unique<caf::actor_system>(core->cfg);
    core->spec = spec;
    core->layout = std::make_unique<block_layout>(spec);
    core->opts.timeout = link_request_timeout;
    shard = spawn_ps_shard(*core->sys, 0);
    auto listening = shard_link_server::listen("127.0.0.1", 0, [](const std::string&) {}, {}, {});
    REQUIRE(listening);
    server = std::move(*listening);
    server->serve(*core->sys, shard, 0);
    auto link = local ? connect_local_link(server->local_name())
                      : connect_link("127.0.0.1", server->port(), link_request_timeout);
    REQUIRE(link);
    auto attached = attach_link(*core->sys, shard, std::move(*link), 0, link_request_timeout);
    REQUIRE(attached);
    remote = *attached;
    core->shards = {remote.handle};
    core->shards_elsewhere = true;
    if (in_place) core->destinations = {remote.destination};
    auto proxy = remote;
    auto served = shard;
    core->stop = [proxy, served] {
      proxy.close();
      caf::anon_send_exit(served, caf::exit_reason::user_shutdown);
    };
    REQUIRE_FALSE(detail::init_shards(*core));
  }

  ~linked_core() { server.reset(); }

  /// The shard's parameters, asked of the shard itself over CAF (not through the link).
  std::vector<float> snapshot() {
    std::vector<float> flat(core->layout->total_floats(), 0.0f);
    caf::scoped_actor self{*core->sys};
    self->request(shard, timeout, snapshot_atom::value)
      .receive([&](const wire_buffer& snap) {
                 REQUIRE(scatter_shard_parameters(snap, *core->layout, flat.data()));
               },
               [&](caf::error& err) { FAIL(describe(err)); });
    return flat;
  }
};

} // namespace

TEST_CASE("worker_client over a data link: replies land in each call's own buffer, 0 payload bytes copied") {
  for (bool local : {false, true}) {
    CAPTURE(local);
    linked_core c(word_aligned_spec(), local, true);
    auto client = detail::make_worker_client(c.core, 0);
    const auto n = c.core->layout->total_floats();
    // Two buffers used in turn, each call's its own; -7 everywhere first: a block not written
    // would show.
    std::vector<float> a(n, -7.0f), b(n, -7.0f), grad(n, 0.0f);
    auto before = copied_payload_bytes.load();
    auto pulled = client.wait(client.pull(0, a.data()));
    REQUIRE(pulled);
    CHECK(copied_payload_bytes.load() - before == 0);
    CHECK(a == c.snapshot());
    for (int64_t clock = 0; clock < 4; ++clock) {
      for (std::size_t i = 0; i < n; ++i) grad[i] = 0.01f * float(int(i % 5) - 2) * float(clock + 1);
      auto& out = clock % 2 ? a : b;
      before = copied_payload_bytes.load();
      REQUIRE(client.wait(client.push_pull(clock, grad.data(), out.data())));
      // the push left from grad, the shard applied it from its receive buffer and replied by
      // reference, the reply landed in `out`
      CHECK(copied_payload_bytes.load() - before == 0);
      auto snapshot = c.snapshot();
      REQUIRE(snapshot.size() == out.size());
      CHECK(std::memcmp(snapshot.data(), out.data(), n * sizeof(float)) == 0);
    }
    CHECK(a != b);  // each holds the clock it was lent for
  }
}

TEST_CASE("worker_client over a data link without destinations scatters each reply: one payload copied per call") {
  linked_core c(word_aligned_spec(), false, false);
  auto client = detail::make_worker_client(c.core, 0);
  const auto n = c.core->layout->total_floats();
  std::vector<float> out(n, -7.0f), grad(n, 0.125f);
  auto before = copied_payload_bytes.load();
  REQUIRE(client.wait(client.pull(0, out.data())));
  REQUIRE(client.wait(client.push_pull(0, grad.data(), out.data())));
  CHECK(copied_payload_bytes.load() - before == 2 * n * sizeof(float));
  CHECK(out == c.snapshot());
}

TEST_CASE("parameter_destination: a requester's queued places go with its requests in order, a closed buffer takes nothing") {
  parameter_destination d;
  auto layout = std::make_shared<const block_layout>(word_aligned_spec());
  std::vector<float> x(4), y(4);
  auto first = std::make_shared<borrowed_output>(x.data());
  auto second = std::make_shared<borrowed_output>(y.data());
  d.expect(7, {layout, nullptr, first});
  d.expect(7, {});  // a request whose reply is not to land in place
  d.expect(7, {layout, nullptr, second});
  CHECK_FALSE(d.take(8));  // another requester: the place set (none)
  CHECK(d.take(7).output == first);
  CHECK_FALSE(d.take(7));
  CHECK(d.take(7).output == second);
  CHECK_FALSE(d.take(7));  // all taken

  float* written = nullptr;
  CHECK(second->write([&](float* flat) { written = flat; }));
  CHECK(written == y.data());
  second->close();
  written = nullptr;
  CHECK_FALSE(second->write([&](float* flat) { written = flat; }));
  CHECK(written == nullptr);
}
