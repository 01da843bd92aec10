// Every figure a run reports is what happened, and the exit status says whether it did what it
// was asked: a run that lost every worker reports the clocks and samples its workers trained
// (not the planned ones) and exits 138 at once, with or without checkpoints; a run whose
// evaluator was lost still scores its final parameters; a run whose final checkpoint failed
// exits 1 and leaves no directory that would later read as a checkpoint the run stopped
// writing. Each is checked against another account: the workers' train events, the export's own
// evaluation of the final parameters, the checkpoint directory, a resumed run.
#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

using actorps::test::contains;
using actorps::test::metrics_events;
using actorps::test::metrics_summary;
using actorps::test::run_actorps;
using actorps::test::scratch_dir;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// 8192 synthetic rows, 2 workers, batch 64: 64 clocks an epoch. A request timeout of 60 s makes
// a run that waits for a request to time out plainly slower than one that does not.
const std::string quick = "simulate --dataset synthetic --model 784-32-10 --no-progress "
                          "--request-timeout 60 ";
const std::string every_worker_killed =
  " --max-replacements 0 --kill worker:0@clock=20,worker:1@clock=20";

struct timed_result {
  actorps::test::command_result run;
  double seconds = 0;
};

timed_result timed(const std::string& args) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_actorps(args);
  return {r, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

std::string checkpoint_dir(const std::string& root, int64_t clock) {
  char name[32];
  std::snprintf(name, sizeof name, "ckpt-%012lld", static_cast<long long>(clock));
  return (fs::path(root) / name).string();
}

/// The summary's trained figures against the workers' train events: each worker's clocks are
/// one past its last reported clock, the samples are the rows those events say were computed,
/// and the run's clocks are the most any worker trained, short of the planned ones.
void check_trained_figures(const json& sum, const std::string& metrics, int64_t planned) {
  REQUIRE(sum.is_object());
  CHECK(sum["workers_lost"] == true);
  CHECK(sum["planned_clocks"] == planned);
  CHECK(sum["planned_samples"] == planned * 2 * 64);
  std::map<int64_t, int64_t> last;  // worker -> its newest reported clock + 1
  int64_t samples = 0;
  for (const auto& e : metrics_events(metrics, "train")) {
    auto w = e["worker"].get<int64_t>();
    last[w] = std::max(last[w], e["clock"].get<int64_t>() + 1);
    samples += e["samples"].get<int64_t>();
  }
  const auto clocks = sum["worker_clocks"].get<std::vector<int64_t>>();
  REQUIRE(clocks.size() == 2);
  int64_t most = 0, sum_clocks = 0;
  for (int64_t w = 0; w < 2; ++w) {
    CAPTURE(w);
    CHECK(clocks[w] == last[w]);
    most = std::max(most, clocks[w]);
    sum_clocks += clocks[w];
  }
  CHECK(sum["clocks"] == most);
  CHECK(most >= 20);
  CHECK(most < planned);
  CHECK(sum["samples"] == sum_clocks * 64);
  CHECK(sum["samples"] == samples);
}

} // namespace

TEST_CASE("a run that loses every worker reports the clocks and samples trained and exits 138 at once") {
  scratch_dir tmp("actorps_workers_lost");
  const auto metrics = tmp.path + "/m.jsonl";
  auto r = timed(quick + "--steps 400 --eval-every 0 --metrics " + metrics + every_worker_killed);
  INFO(r.run.output);
  CHECK(r.run.status == 138);
  CHECK(r.seconds < 30);
  CHECK(contains(r.run.output, "every worker was lost: the run trained "));
  CHECK(contains(r.run.output, " of its 400 clocks (there is no checkpoint)"));
  CHECK(contains(r.run.output, " of 400 clocks (per worker: "));
  const auto sum = metrics_summary(metrics);
  check_trained_figures(sum, metrics, 400);
  CHECK(sum["last_checkpoint"] == -1);
  CHECK(metrics_events(metrics, "workers_lost").size() == 1);
}

TEST_CASE("a run with checkpoints that loses every worker ends at once with exit 138, and --resume goes on") {
  scratch_dir tmp("actorps_workers_lost_ckpt");
  const auto metrics = tmp.path + "/m.jsonl";
  const auto run = quick + "--steps 400 --eval-every 0 --checkpoint-dir " + tmp.path
                   + " --checkpoint-every 10 ";
  auto r = timed(run + "--metrics " + metrics + every_worker_killed);
  INFO(r.run.output);
  CHECK(r.run.status == 138);
  CHECK(r.seconds < 30);  // not after the request timeout on a final checkpoint never reached
  const auto sum = metrics_summary(metrics);
  check_trained_figures(sum, metrics, 400);
  const auto newest = sum["last_checkpoint"].get<int64_t>();
  CHECK(newest >= 10);
  CHECK(newest <= sum["clocks"].get<int64_t>());
  CHECK(contains(r.run.output, "(the newest checkpoint is at clock " + std::to_string(newest)
                                 + "); exit 138"));
  CHECK(fs::exists(fs::path(checkpoint_dir(tmp.path, newest)) / "MANIFEST.json"));
  CHECK_FALSE(fs::exists(checkpoint_dir(tmp.path, 400)));
  CHECK(sum["checkpoint_failures"] == 0);

  // the restart an exit of 138 asks for trains the rest
  auto resumed = run_actorps(run + "--resume --metrics " + tmp.path + "/m2.jsonl");
  INFO(resumed.output);
  CHECK(resumed.status == 0);
  CHECK(contains(resumed.output, "(clock " + std::to_string(newest) + ")"));
  const auto done = metrics_summary(tmp.path + "/m2.jsonl");
  CHECK(done["clocks"] == 400);
  CHECK(done["workers_lost"] == false);
  CHECK(done["samples"] == 400 * 2 * 64);
}

TEST_CASE("a run whose evaluator was lost scores its final parameters, as its export does") {
  scratch_dir tmp("actorps_evaluator_lost");
  const auto metrics = tmp.path + "/m.jsonl";
  auto r = run_actorps(quick + "--synthetic-test-rows 512 --steps 200 --eval-every 20 "
                       "--max-replacements 0 --kill evaluator:0@clock=30 --export-dir "
                       + tmp.path + "/export --metrics " + metrics);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(contains(r.output, "starting one to score the final parameters"));
  CHECK(contains(r.output, "final test accuracy"));
  const auto sum = metrics_summary(metrics);
  CHECK(sum["failures"] == 1);
  CHECK(sum["final_eval_clock"] == 200);
  const auto evals = metrics_events(metrics, "eval");
  REQUIRE(!evals.empty());
  CHECK(evals.back()["final"] == true);
  CHECK(evals.back()["clock"] == 200);
  CHECK(evals.back()["test_accuracy"] == sum["final_test_accuracy"]);
  // the export scores the final parameters itself, on the same test rows
  std::ifstream in(tmp.path + "/export/1/metadata.json");
  REQUIRE(in);
  const auto meta = json::parse(in);
  CHECK(std::abs(meta["test_accuracy"].get<double>() - sum["final_test_accuracy"].get<double>())
        <= 1e-6);
}

TEST_CASE("a run whose final checkpoint failed exits 1 saying so, and leaves no unfinished directory") {
  scratch_dir tmp("actorps_final_ckpt_failed");
  const auto run = quick + "--steps 60 --eval-every 0 --checkpoint-dir " + tmp.path
                   + " --checkpoint-every 20 ";
  auto r = run_actorps(run + "--metrics " + tmp.path + "/m.jsonl --kill disk@checkpoint=60");
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(contains(r.output, "error: the final checkpoint failed ("));
  CHECK(contains(r.output, "fault injection (disk@checkpoint=60)"));
  CHECK(contains(r.output, "the final state is not saved; the newest checkpoint is at clock 40"));
  const auto sum = metrics_summary(tmp.path + "/m.jsonl");
  CHECK(sum["final_checkpoint_failed"] == true);
  CHECK(sum["last_checkpoint"] == 40);
  CHECK(sum["checkpoints"] == 2);
  CHECK(sum["clocks"] == 60);
  CHECK_FALSE(fs::exists(checkpoint_dir(tmp.path, 60)));  // removed, not left unfinished
  CHECK(fs::exists(fs::path(checkpoint_dir(tmp.path, 40)) / "MANIFEST.json"));

  // resuming finds the newest complete one, and nothing it would call an interrupted write
  auto resumed = run_actorps(run + "--resume --metrics " + tmp.path + "/m2.jsonl");
  INFO(resumed.output);
  CHECK(resumed.status == 0);
  CHECK(contains(resumed.output, "(clock 40)"));
  CHECK_FALSE(contains(resumed.output, "stopped while writing"));
  CHECK(fs::exists(fs::path(checkpoint_dir(tmp.path, 60)) / "MANIFEST.json"));
}
