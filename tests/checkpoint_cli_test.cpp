// Checkpoints and fault injection as a user meets them: a process killed between shard files
// leaves the previous checkpoint in use, --resume says what it skipped and where it resumes,
// and bad checkpoint flags name themselves.
#include "actors/storage/checkpoint_store.hpp"
#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using actorps::test::contains;
using actorps::test::run_actorps;
using actorps::test::scratch_dir;
namespace fs = std::filesystem;

namespace {

std::string quick_run(const std::string& dir) {
  return "simulate --dataset synthetic --model 784-32-10 --steps 60 --eval-every 0 --no-progress "
         "--checkpoint-every 20 --checkpoint-dir " + dir;
}


} // namespace

TEST_CASE("a crash between shard files leaves the previous checkpoint, and --resume uses it") {
  scratch_dir tmp("actorps_crash");
  auto crashed = run_actorps(quick_run(tmp.path) + " --kill process@checkpoint=40");
  INFO(crashed.output);
  CHECK(crashed.status == 128 + 9);  // killed by SIGKILL (as the shell reports it)
  CHECK(contains(crashed.output, "fault injection: crashing while checkpoint"));
  auto torn = fs::path(tmp.path) / "ckpt-000000000040";
  REQUIRE(fs::is_directory(torn));
  CHECK_FALSE(fs::exists(torn / actorps::manifest_name));
  int shard_files = 0;
  for (int s = 0; s < 2; ++s) shard_files += fs::exists(torn / actorps::shard_file_name(s));
  CHECK(shard_files >= 1);  // it died with at least one shard file on disk, and no manifest
  CHECK(fs::exists(fs::path(tmp.path) / "ckpt-000000000020" / actorps::manifest_name));

  auto resumed = run_actorps(quick_run(tmp.path) + " --resume");
  INFO(resumed.output);
  CHECK(resumed.status == 0);
  CHECK(contains(resumed.output, "resume: skipping " + torn.string() + ": no MANIFEST.json"));
  CHECK(contains(resumed.output, "resuming from " + tmp.path + "/ckpt-000000000020 (clock 20)"));
  CHECK(contains(resumed.output, "resumed from clock 20"));
  CHECK(fs::exists(fs::path(tmp.path) / "ckpt-000000000060" / actorps::manifest_name));
  CHECK(fs::exists(fs::path(tmp.path) / "ckpt-000000000040.old-1"));  // the torn one, kept aside
}

TEST_CASE("--resume refuses a checkpoint of another model, or none, and overwrites nothing") {
  scratch_dir tmp("actorps_resume");
  REQUIRE(run_actorps(quick_run(tmp.path)).status == 0);
  auto manifest = fs::path(tmp.path) / "ckpt-000000000060" / actorps::manifest_name;
  auto written = fs::last_write_time(manifest);

  auto other = run_actorps("simulate --dataset synthetic --model 784-16-10 --steps 60 --no-progress "
                           "--checkpoint-dir " + tmp.path + " --resume");
  INFO(other.output);
  CHECK(other.status == 2);
  CHECK(contains(other.output, "cannot continue this run: the checkpoint's model is mlp:784-32-10, "
                               "this run's is mlp:784-16-10"));
  CHECK(fs::last_write_time(manifest) == written);

  scratch_dir empty("actorps_empty");
  auto none = run_actorps(quick_run(empty.path) + " --resume");
  CHECK(none.status == 2);
  CHECK(contains(none.output, "--resume: " + empty.path + ": no valid checkpoint (no ckpt-* directories)"));
}

TEST_CASE("bad checkpoint and fault flags exit 2 naming the flag") {
  scratch_dir tmp("actorps_flags");
  std::ofstream(tmp.path + "/a-file") << "x";
  const std::string base = "simulate --dataset synthetic --steps 10 ";
  struct bad_case {
    std::string args, message;
  };
  for (const auto& c : std::vector<bad_case>{
         {"--checkpoint-every 10", "--checkpoint-every needs --checkpoint-dir"},
         {"--checkpoint-dir " + tmp.path + " --keep 0", "--keep must be at least 1"},
         {"--checkpoint-dir " + tmp.path + "/a-file/ckpt", "--checkpoint-dir " + tmp.path + "/a-file/ckpt cannot be created"},
         {"--kill worker:9@clock=5", "--kill worker:9@clock=5: there is no worker:9"},
         {"--kill ps:0@sometime", "the moment must be clock=C, seconds=T (non-negative) or resize=K"},
         {"--kill chief:0@clock=5", "ROLE must be worker, ps or evaluator"},
         {"--kill worker:0@clock=5,ps:3@seconds=1", "--kill ps:3@seconds=1: there is no ps:3"},
         {"--kill process@checkpoint=10", "--kill process@checkpoint needs --checkpoint-dir"},
         {"--resume", "--resume needs a directory (or --checkpoint-dir)"},
         {"--resume auto", "--resume auto needs --checkpoint-dir"},
         {"--overwrite-checkpoints", "--overwrite-checkpoints needs --checkpoint-dir"},
         {"--checkpoint-dir " + tmp.path + " --checkpoint-writer nfs",
          "--checkpoint-writer must be shards or chief (got nfs)"},
       }) {
    CAPTURE(c.args);
    auto r = run_actorps(base + c.args);
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(contains(r.output, c.message));
  }
}
