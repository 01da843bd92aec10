// Checkpoints belong to the run that made them: a run prunes only its own (an older run's higher
// clocks never make it delete its new ones), a fresh run refuses a directory holding another
// run's checkpoints unless --overwrite-checkpoints moves them aside, and a later --resume takes
// the new run's checkpoints, never the older run's.
#include "actors/storage/checkpoint_lineage.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

using actorps::test::contains;
using actorps::test::run_actorps;
using actorps::test::scratch_dir;
namespace fs = std::filesystem;

namespace {

std::string run_in(const std::string& dir, int64_t steps) {
  return "simulate --dataset synthetic --model 784-32-10 --eval-every 0 --no-progress "
         "--checkpoint-every 20 --keep 3 --steps " + std::to_string(steps) + " --checkpoint-dir " + dir;
}


bool complete(const std::string& root, int64_t clock) {
  return fs::exists(fs::path(root) / actorps::checkpoint_dir_name(clock) / actorps::manifest_name);
}

} // namespace

TEST_CASE("a fresh run refuses a directory holding another run's checkpoints") {
  scratch_dir tmp("actorps_lineage");
  REQUIRE(run_actorps(run_in(tmp.path, 100)).status == 0);  // 60, 80, 100 kept
  auto before = actorps::test::dir_entries(tmp.path);
  auto again = run_actorps(run_in(tmp.path, 40));
  INFO(again.output);
  CHECK(again.status == 2);
  CHECK(contains(again.output, "--checkpoint-dir " + tmp.path + " holds "));
  CHECK(contains(again.output, " checkpoint(s) of another run (newest ckpt-000000000100"));
  CHECK(contains(again.output, "--overwrite-checkpoints moves them"));
  CHECK(actorps::test::dir_entries(tmp.path) == before);  // nothing touched
}

TEST_CASE("--overwrite-checkpoints moves the older run's aside and the new run keeps its own") {
  scratch_dir tmp("actorps_lineage_overwrite");
  REQUIRE(run_actorps(run_in(tmp.path, 100)).status == 0);
  auto old_id = actorps::run_id_of(fs::path(tmp.path) / "ckpt-000000000100");
  REQUIRE_FALSE(old_id.empty());
  const auto old_ones = actorps::other_runs_checkpoints(tmp.path, "").size();  // 3 (2 if busy)

  auto fresh = run_actorps(run_in(tmp.path, 40) + " --overwrite-checkpoints");
  INFO(fresh.output);
  REQUIRE(fresh.status == 0);
  CHECK(contains(fresh.output, "--overwrite-checkpoints: moved " + std::to_string(old_ones)
                               + " checkpoint(s) of another run to " + tmp.path + "/superseded-"));
  // its own checkpoints stay (before: --keep 3 removed them at once, the old run's clocks
  // being higher)
  CHECK(complete(tmp.path, 20));
  CHECK(complete(tmp.path, 40));
  CHECK_FALSE(fs::exists(fs::path(tmp.path) / "ckpt-000000000100"));
  int aside = 0;
  for (const auto& e : fs::directory_iterator(tmp.path))
    if (e.path().filename().string().rfind("superseded-", 0) == 0) {
      ++aside;
      CHECK(actorps::run_id_of(e.path() / "ckpt-000000000100") == old_id);  // moved, not lost
    }
  CHECK(aside == 1);

  auto resumed = run_actorps(run_in(tmp.path, 60) + " --resume");
  INFO(resumed.output);
  CHECK(resumed.status == 0);
  CHECK(contains(resumed.output, "resuming from " + tmp.path + "/ckpt-000000000040 (clock 40)"));
}
