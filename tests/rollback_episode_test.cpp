// A rollback episode (actors/chief/rollback_episode.hpp) on its own, without a chief: a real
// shard and checkpoint actor in this process, and this test's actor as the one that asks it.
#include "actors/chief/rollback_episode.hpp"

#include "actors/storage/checkpoint_io.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shard_fixture.hpp"

#include <doctest/doctest.h>

using namespace actorps;

namespace {

rollback_plan plan_for(test::shard_fixture& f, const test::scratch_dir& dir) {
  rollback_plan plan;
  plan.io = spawn_checkpoint_io(*f.sys);
  plan.dir = dir.path;  // holds no checkpoint
  plan.spec = f.spec;
  plan.shards = {f.shard};
  plan.incarnations = {7, 8};
  plan.request_timeout = std::chrono::minutes(1);  // longer than the test waits
  plan.failed_at = 3;
  return plan;
}

/// Asks the episode (restore): its answer, or the error.
caf::expected<loaded_checkpoint> restore(test::shard_fixture& f, rollback_episode_actor episode) {
  caf::expected<loaded_checkpoint> out{caf::none};
  (*f.self)->request(episode, test::timeout, restore_atom::value)
    .receive([&](loaded_checkpoint& ckpt) { out = std::move(ckpt); },
             [&](caf::error& err) { out = std::move(err); });
  return out;
}

} // namespace

TEST_CASE("a rollback episode restores every shard to the initial values when there is no checkpoint") {
  test::shard_fixture f(test::tiny_spec(consistency::async, 2));
  test::scratch_dir dir;
  REQUIRE(f.push_pull(f.push_of(0, 0, 1.0f)));  // the shard moves away from 0, 1, 2, ...
  auto episode = spawn_rollback_episode(*f.sys, caf::actor_cast<caf::actor>(*f.self),
                                        plan_for(f, dir));
  auto restored = restore(f, episode);
  REQUIRE(restored);
  CHECK(restored->dir.empty());  // none found: the seeded initial values
  CHECK(restored->clock == 0);
  auto seeded = initial_values(f.spec.model, f.spec.seed);
  CHECK(f.snapshot() == seeded);
  CHECK(f.stats().min_clock == 0);
  // the incarnations it was given are the ones the shard admits: worker 0's is now 7
  std::vector<float> grad(f.layout.total_floats(), 1.0f);
  CHECK_FALSE(f.push_pull(encode_push(0, 0, 0, f.layout, grad.data(), 0)));
  CHECK(f.push_pull(encode_push(0, 0, 0, f.layout, grad.data(), 7)));
}

TEST_CASE("a rollback episode whose shard is lost answers with the loss, not a timeout") {
  test::shard_fixture f(test::tiny_spec(consistency::async, 2));
  test::scratch_dir dir;
  auto plan = plan_for(f, dir);
  (*f.self)->send_exit(f.shard, caf::exit_reason::kill);
  auto episode = spawn_rollback_episode(*f.sys, caf::actor_cast<caf::actor>(*f.self),
                                        std::move(plan));
  auto restored = restore(f, episode);
  REQUIRE_FALSE(restored);
  CHECK(is_error(restored.error(), errc::shard_lost));
}
