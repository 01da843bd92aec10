// A checkpoint that fails to write is an error the run reports, not only a log line: counted in
// the summary and the metrics, and the run exits non-zero when every checkpoint failed. The
// failure comes from a fault hook (--kill disk@checkpoint=C: committing that checkpoint fails as
// a full disk would), since the tests may run as root, whom no permission bit stops.
#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using actorps::test::contains;
using actorps::test::metrics_summary;
using actorps::test::run_actorps;
using actorps::test::scratch_dir;
namespace fs = std::filesystem;

namespace {

std::string run_in(const std::string& dir) {
  return "simulate --dataset synthetic --model 784-32-10 --steps 60 --eval-every 0 --no-progress "
         "--checkpoint-dir " + dir + " --metrics " + dir + "/m.jsonl";
}



} // namespace

TEST_CASE("a run whose every checkpoint failed exits 1 and says so") {
  scratch_dir tmp("actorps_ckpt_fail");
  auto r = run_actorps(run_in(tmp.path) + " --kill disk@checkpoint=60");  // the only one: the last
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(contains(r.output, "checkpoint at clock 60 failed"));
  CHECK(contains(r.output, "checkpoint failures 1 (last: "));
  CHECK(contains(r.output, "fault injection (disk@checkpoint=60)"));
  CHECK(contains(r.output, "every checkpoint of this run failed (1)"));
  auto sum = metrics_summary(tmp.path + "/m.jsonl");
  CHECK(sum["checkpoints"] == 0);
  CHECK(sum["checkpoint_failures"] == 1);
  CHECK_FALSE(fs::exists(fs::path(tmp.path) / "ckpt-000000000060" / "MANIFEST.json"));
}

TEST_CASE("a run with one failed checkpoint among good ones counts it and exits 0") {
  scratch_dir tmp("actorps_ckpt_fail_one");
  auto r = run_actorps(run_in(tmp.path) + " --checkpoint-every 20 --kill disk@checkpoint=40");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "checkpoints 2"));
  CHECK(contains(r.output, "checkpoint failures 1"));
  auto sum = metrics_summary(tmp.path + "/m.jsonl");
  CHECK(sum["checkpoints"] == 2);
  CHECK(sum["checkpoint_failures"] == 1);
  CHECK(fs::exists(fs::path(tmp.path) / "ckpt-000000000060" / "MANIFEST.json"));
  CHECK_FALSE(fs::exists(fs::path(tmp.path) / "ckpt-000000000040"));  // the failed one removed
}

TEST_CASE("--kill disk@checkpoint needs --checkpoint-dir") {
  auto r = run_actorps("simulate --dataset synthetic --steps 10 --kill disk@checkpoint=10");
  CHECK(r.status == 2);
  CHECK(contains(r.output, "--kill disk@checkpoint needs --checkpoint-dir"));
}
