// --resume auto: one command for the first start and every restart. It resumes from the newest
// valid checkpoint of this run in --checkpoint-dir, starts fresh when there is none (saying
// which), never takes another run's; a sync run killed mid-way and started again with the same
// command ends with exactly the parameters of a run that was never interrupted.
#include "actors/storage/checkpoint_store.hpp"
#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

using actorps::test::contains;
using actorps::test::run_actorps;
using actorps::test::scratch_dir;
namespace fs = std::filesystem;

namespace {

std::string command(const std::string& dir, const std::string& steps_and_seed = "--steps 60") {
  return "simulate --dataset synthetic --model 784-32-10 --mode sync --eval-every 0 --no-progress "
         "--checkpoint-every 20 --resume auto --checkpoint-dir " + dir + " " + steps_and_seed;
}


std::string file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// "final test accuracy A, test loss L" of a summary.
std::string final_line(const std::string& output) {
  auto at = output.find("final test accuracy");
  return at == std::string::npos ? "" : output.substr(at, output.find(", max staleness", at) - at);
}

} // namespace

TEST_CASE("--resume auto in an empty directory starts fresh and says so") {
  scratch_dir tmp("actorps_auto_fresh");
  auto r = run_actorps(command(tmp.path));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "resume auto: no checkpoint of this run in " + tmp.path + ": starting fresh"));
  CHECK_FALSE(contains(r.output, "resumed from clock"));
}

TEST_CASE("a sync run killed and started again with --resume auto ends as if never killed") {
  scratch_dir whole("actorps_auto_whole"), killed("actorps_auto_killed");
  auto uninterrupted = run_actorps(command(whole.path));
  INFO(uninterrupted.output);
  REQUIRE(uninterrupted.status == 0);

  // SIGKILLed while writing the checkpoint at 40: ckpt-20 is the newest complete one
  auto crashed = run_actorps(command(killed.path) + " --kill process@checkpoint=40");
  INFO(crashed.output);
  REQUIRE(crashed.status == 128 + 9);
  auto restarted = run_actorps(command(killed.path));
  INFO(restarted.output);
  REQUIRE(restarted.status == 0);
  CHECK(contains(restarted.output, "resuming from " + killed.path + "/ckpt-000000000020 (clock 20)"));
  CHECK(contains(restarted.output, "resumed from clock 20"));
  CHECK(final_line(restarted.output) == final_line(uninterrupted.output));
  REQUIRE_FALSE(final_line(restarted.output).empty());
  for (int s = 0; s < 2; ++s) {  // sync: the same parameters and optimizer state, bit for bit
    CAPTURE(s);
    auto a = file_bytes(fs::path(whole.path) / "ckpt-000000000060" / actorps::shard_file_name(s));
    auto b = file_bytes(fs::path(killed.path) / "ckpt-000000000060" / actorps::shard_file_name(s));
    CHECK(!a.empty());
    CHECK(a == b);
  }
  // started once more, the same command finds the run complete and refuses to redo it
  auto again = run_actorps(command(killed.path));
  CHECK(again.status == 2);
  CHECK(contains(again.output, "nothing is left to train"));
}

TEST_CASE("--resume auto never takes another run's checkpoint") {
  scratch_dir tmp("actorps_auto_other");
  REQUIRE(run_actorps(command(tmp.path, "--seed 2 --steps 40")).status == 0);
  auto r = run_actorps(command(tmp.path));
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(contains(r.output, "resume auto: no checkpoint of this run"));
  CHECK(contains(r.output, "holds 2 checkpoint(s) of another run (newest ckpt-000000000040"));
  CHECK(contains(r.output, "the checkpoint's seed is 2, this run's 1"));
  auto moved = run_actorps(command(tmp.path) + " --overwrite-checkpoints");
  INFO(moved.output);
  CHECK(moved.status == 0);
  CHECK_FALSE(contains(moved.output, "resumed from clock"));
}
