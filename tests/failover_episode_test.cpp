// A fail-over episode (actors/chief/failover.hpp) on its own, without a chief: a real primary
// and standby in this process, stub workers, and this test's actor as the one it reports to.
#include "actors/chief/failover.hpp"

#include "tests/shard_fixture.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace actorps;

namespace {

/// A worker that answers every reroute of shard 0 to `expected` with 2 pushes re-sent (-100
/// for any other shard or handle, which the total would show).
worker_actor rerouted_worker(caf::actor_system& sys, ps_shard_actor expected) {
  return caf::actor_cast<worker_actor>(sys.spawn([=](caf::event_based_actor*) -> caf::behavior {
    return {[=](reroute_atom, int32_t s, const ps_shard_actor& shard) -> int32_t {
      return s == 0 && shard == expected ? 2 : -100;
    }};
  }));
}

/// A worker that never answers a reroute (its process is gone); it tells `observer` it was
/// asked, with its index.
worker_actor silent_worker(caf::actor_system& sys, caf::actor observer, int32_t index) {
  return caf::actor_cast<worker_actor>(sys.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    return {[=](reroute_atom, int32_t, const ps_shard_actor&) -> caf::result<int32_t> {
      self->send(observer, reroute_atom::value, index);
      return self->make_response_promise<int32_t>();  // never delivered
    }};
  }));
}

/// A standby that is lost as it is asked to take over, without answering.
ps_shard_actor standby_lost_when_promoted(caf::actor_system& sys) {
  return caf::actor_cast<ps_shard_actor>(sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
    return {[=](promote_atom) -> caf::result<int64_t> {
      auto never = self->make_response_promise<int64_t>();
      self->quit(caf::exit_reason::kill);
      return never;
    }};
  }));
}

failover_plan plan_for(ps_shard_actor promoted) {
  failover_plan plan;
  plan.shard = 0;
  plan.promoted = std::move(promoted);
  // longer than the test waits: an answer that never comes must not end the episode by timeout
  plan.request_timeout = std::chrono::minutes(1);
  plan.detected = std::chrono::steady_clock::now();
  return plan;
}

} // namespace

TEST_CASE("a fail-over episode promotes the standby, reroutes the workers and reports done") {
  test::shard_fixture f(test::tiny_spec(consistency::async, 3));
  auto standby = spawn_ps_shard(*f.sys, 0);
  REQUIRE(f.back_up(standby));
  REQUIRE(f.push_pull(f.push_of(0, 0, 1.0f)));  // worker 0 at clock 1, workers 1 and 2 at 0
  (*f.self)->send_exit(f.shard, caf::exit_reason::kill);

  auto plan = plan_for(standby);
  auto me = caf::actor_cast<caf::actor>(*f.self);
  plan.workers = {{0, rerouted_worker(*f.sys, standby)}, {1, silent_worker(*f.sys, me, 1)},
                  {2, rerouted_worker(*f.sys, standby)}};
  auto episode = spawn_failover_episode(*f.sys, caf::actor_cast<failover_listener>(*f.self),
                                        std::move(plan));
  // Worker 1 was asked and will never answer: once told it is lost, it counts as none re-sent.
  int32_t asked = -1;
  (*f.self)->receive([&](reroute_atom, int32_t w) { asked = w; },
                     caf::after(test::timeout) >> [] {});
  REQUIRE(asked == 1);
  (*f.self)->send(episode, leave_atom::value, int32_t{1});

  failover_done done;
  std::string failed;
  (*f.self)->receive([&](failover_atom, const failover_done& d) { done = d; },
                     [&](failover_atom, const failover_failed& d) { failed = d.reason; },
                     caf::after(test::timeout) >> [&] { failed = "no report"; });
  REQUIRE(failed.empty());
  CHECK(done.shard == 0);
  CHECK(done.promoted == standby);
  CHECK(done.pushes_resent == 4);       // 2 from each answering worker, none from the lost one
  CHECK(done.clocks_in_flight == 1);    // worker 0 one clock ahead of the slowest
  CHECK(done.pushes_deduplicated == 0); // the stubs re-sent nothing for real
  CHECK(done.ms > 0);
  // the promoted standby serves as a primary: worker 1's push is applied
  f.shard = standby;
  CHECK(f.push_pull(f.push_of(1, 0, 1.0f)));
  CHECK(f.stats().pushes == 2);
}

TEST_CASE("a fail-over episode whose standby is lost while promoted reports failed") {
  test::actor_fixture f;
  auto standby = standby_lost_when_promoted(*f.sys);
  auto plan = plan_for(standby);
  auto me = caf::actor_cast<caf::actor>(*f.self);
  plan.workers = {{0, silent_worker(*f.sys, me, 0)}};
  spawn_failover_episode(*f.sys, caf::actor_cast<failover_listener>(*f.self), std::move(plan));

  failover_failed failed;
  bool done = false, reported = false;
  (*f.self)->receive([&](failover_atom, const failover_done&) { done = reported = true; },
                     [&](failover_atom, const failover_failed& d) {
                       failed = d;
                       reported = true;
                     },
                     caf::after(test::timeout) >> [] {});
  REQUIRE(reported);
  CHECK_FALSE(done);
  CHECK(failed.shard == 0);
  CHECK(failed.promoted == standby);
  CHECK(failed.reason.find("lost while being promoted") != std::string::npos);
  // no worker was asked to reroute to a shard that never served: its notice would be first
  bool asked = false;
  (*f.self)->receive([&](reroute_atom, int32_t) { asked = true; },
                     caf::after(std::chrono::milliseconds(0)) >> [] {});
  CHECK_FALSE(asked);
}
