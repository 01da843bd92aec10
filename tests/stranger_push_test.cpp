// A stranger on a shard's data link (no TLS: anyone who reaches the port) pushes 3e38 in a
// worker's name at the clock that worker is at, before each of that worker's own pushes: every
// such push is refused whole, and the sync run ends bit for bit as the same run without it — so
// its accuracy is the unattacked run's.
#include "actors/deploy/remote_shard.hpp"
#include "actors/link/shard_link_server.hpp"
#include "shard_fixture.hpp"

#include <doctest/doctest.h>

#include <cstring>

using namespace actorps;
using namespace actorps::test;

namespace {

/// Two workers' sync run of `clocks` clocks on a shard served by a data link; the workers talk
/// to the shard in-process, the stranger (when `attacked`) over the link. Returns the final
/// values and the shard's stats.
std::pair<std::vector<float>, shard_stats> run(bool attacked, int64_t clocks) {
  auto spec = tiny_spec(consistency::sync, 2);
  spec.optimizer.kind = optimizer_kind::adam;
  spec.optimizer.learning_rate = 0.01f;
  shard_fixture f(spec);
  auto listening = shard_link_server::listen("127.0.0.1", 0, [](const std::string&) {});
  REQUIRE(listening);
  auto server = std::move(*listening);
  server->serve(*f.sys, f.shard, 0);
  auto link = connect_link("127.0.0.1", server->port(), std::chrono::seconds(10));
  REQUIRE(link);
  auto stranger = attach_link(*f.sys, f.shard, std::move(*link), 0, std::chrono::seconds(10));
  REQUIRE(stranger);
  for (int64_t c = 0; c < clocks; ++c) {
    for (int32_t w = 0; w < 2; ++w) {
      if (attacked) {
        std::vector<float> huge(f.layout.total_floats(), -3e38f);
        huge[w] = 1.0f;  // mostly huge, one plausible value: refused whole all the same
        bool refused = false;
        (*f.self)->request(stranger->handle, timeout, push_pull_atom::value,
                           push_request{encode_push(w, c, 0, f.layout, huge.data())})
          .receive([](const wire_buffer&) { FAIL("the stranger's push was applied"); },
                   [&](caf::error& e) {
                     refused = e == make_error(errc::value_out_of_bounds);
                   });
        CHECK(refused);
      }
      std::vector<float> grad(f.layout.total_floats());
      for (std::size_t i = 0; i < grad.size(); ++i)
        grad[i] = 0.01f * float((i * 7 + std::size_t(w) * 3 + std::size_t(c)) % 11) - 0.05f;
      (*f.self)->send(f.shard, push_pull_atom::value, push_request{encode_push(w, c, 0, f.layout, grad.data())});
    }
    for (int i = 0; i < 2; ++i)
      (*f.self)->receive([](const wire_buffer&) {}, [](caf::error& e) { FAIL(describe(e)); },
                         caf::after(timeout) >> [] { FAIL("no reply"); });
  }
  stranger->close();
  auto out = std::make_pair(f.snapshot(), f.stats());
  server.reset();
  return out;
}

} // namespace

TEST_CASE("a stranger's 3e38 pushes on the data link leave a sync run bit for bit as without") {
  auto [clean, clean_stats] = run(false, 8);
  auto [attacked, attacked_stats] = run(true, 8);
  REQUIRE(clean.size() == attacked.size());
  CHECK(std::memcmp(clean.data(), attacked.data(), clean.size() * sizeof(float)) == 0);
  CHECK(attacked_stats.updates == clean_stats.updates);
  CHECK(attacked_stats.updates == 8);
  CHECK(attacked_stats.gradients_refused == 16);
  CHECK(attacked_stats.updates_refused == 0);
  CHECK(clean_stats.gradients_refused == 0);
}
