// Fault injection in the single-process cluster: a worker, the evaluator and a shard are
// killed mid-run in every consistency mode; every run finishes, counts its failures and
// recoveries, reports each in the metrics, and ends within a point of the same run without faults.
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/simulation_fixture.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace actorps;
using actorps::test::synthetic_run;
using scratch = actorps::test::scratch_dir;
namespace fs = std::filesystem;

namespace {

std::vector<nlohmann::json> events(const fs::path& file, const std::string& kind) {
  return test::metrics_events(file.string(), kind);
}

/// The clock of the newest checkpoint completed before the first failure of `role` (0: none).
int64_t checkpoint_before_failure(const fs::path& file, const std::string& role) {
  int64_t clock = 0;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto e = nlohmann::json::parse(line);
    if (e["event"] == "checkpoint") clock = e["clock"].get<int64_t>();
    if (e["event"] == "failure" && e["role"] == role) break;
  }
  return clock;
}

simulation_options fault_run(consistency mode, const fs::path& dir) {
  auto opts = synthetic_run(mode, 3, 2, 150, 2);
  opts.chief.slow_ms = {1, 1, 1};  // a few ms per clock: checkpoints complete between kills
  opts.chief.checkpoints.dir = (dir / "ckpt").string();
  opts.chief.checkpoints.every = 40;
  opts.chief.spec.checkpoint_every = 40;
  opts.chief.metrics = std::make_shared<metrics_file>((dir / "run.jsonl").string());
  return opts;
}

planned_kill kill(planned_kill::role role, int32_t index, int64_t clock) {
  planned_kill k;
  k.target = role;
  k.index = index;
  k.at_clock = clock;
  return k;
}

} // namespace

TEST_CASE("a killed worker, evaluator and shard are recovered in sync, ssp and async") {
  for (auto mode : {consistency::sync, consistency::ssp, consistency::async}) {
    std::string mode_name = to_string(mode);
    CAPTURE(mode_name);
    scratch clean_dir, faulty_dir;
    auto clean = simulate(fault_run(mode, fs::path(clean_dir.path)));
    REQUIRE(clean);
    CHECK(clean->failures == 0);

    auto opts = fault_run(mode, fs::path(faulty_dir.path));
    opts.chief.kills = {kill(planned_kill::role::worker, 1, 25),
                        kill(planned_kill::role::evaluator, 0, 55),
                        kill(planned_kill::role::ps, 1, 95)};
    auto faulty = simulate(std::move(opts));
    REQUIRE(faulty);
    CHECK(faulty->clocks == 150);
    CHECK(faulty->failures == 3);
    CHECK(faulty->recoveries == 3);
    CHECK(std::abs(faulty->final_test_accuracy - clean->final_test_accuracy) <= 0.01);

    auto metrics = fs::path(faulty_dir.path) / "run.jsonl";
    auto failures = events(metrics, "failure"), recoveries = events(metrics, "recovery");
    REQUIRE(failures.size() == 3);
    REQUIRE(recoveries.size() == 3);
    CHECK(failures[0]["role"] == "worker");
    CHECK(failures[1]["role"] == "evaluator");
    CHECK(failures[2]["role"] == "ps");
    for (const auto& r : recoveries) CHECK(r["ms"].get<double>() >= 0);
    const auto& worker = recoveries[0];
    CHECK(worker["role"] == "worker");
    // entered at the shards' agreed clock: not before the kill (the others may have run on
    // between the kill and the replacement: nothing waits for a worker that is gone)
    CHECK(worker["clock"].get<int64_t>() >= 25 - 3);
    const auto& shard = recoveries[2];
    CHECK(shard["role"] == "ps");
    // back to the newest complete checkpoint: at least the newest one reported complete
    // before the failure (one still in flight at the failure may or may not have made it)
    auto back_to = shard["clock"].get<int64_t>();
    CHECK((back_to == 0 || back_to == 40 || back_to == 80));
    CHECK(back_to >= checkpoint_before_failure(metrics, "ps"));
    CHECK(shard["lost_clocks"].get<int64_t>() >= 95 - back_to);
    CHECK(events(metrics, "kill").size() == 3);
  }
}

TEST_CASE("a shard lost before any checkpoint restarts the run from the initial values") {
  scratch dir;
  auto clean = simulate(fault_run(consistency::sync, fs::path(dir.path)));
  REQUIRE(clean);
  scratch faulty_dir;
  auto opts = fault_run(consistency::sync, fs::path(faulty_dir.path));
  opts.chief.kills = {kill(planned_kill::role::ps, 0, 15)};
  auto faulty = simulate(std::move(opts));
  REQUIRE(faulty);
  auto recoveries = events(fs::path(faulty_dir.path) / "run.jsonl", "recovery");
  REQUIRE(recoveries.size() == 1);
  CHECK(recoveries[0]["clock"] == 0);
  CHECK(recoveries[0]["lost_clocks"].get<int64_t>() >= 15);
  CHECK(faulty->final_test_accuracy == clean->final_test_accuracy);  // sync replays exactly
}

TEST_CASE("without --checkpoint-dir a lost shard ends the run with an error saying so") {
  auto opts = synthetic_run(consistency::ssp, 2, 2, 60, 1);
  opts.chief.kills = {kill(planned_kill::role::ps, 1, 10)};
  auto result = simulate(std::move(opts));
  REQUIRE_FALSE(result);
  CHECK(describe(result.error()).find("parameter shard 1 lost and there is no --checkpoint-dir")
        != std::string::npos);
}

TEST_CASE("a worker lost more often than --max-replacements is left out and the run ends") {
  scratch dir;
  auto opts = fault_run(consistency::ssp, fs::path(dir.path));
  opts.chief.max_replacements = 1;
  opts.chief.kills = {kill(planned_kill::role::worker, 2, 10), kill(planned_kill::role::worker, 2, 30)};
  auto result = simulate(std::move(opts));
  REQUIRE(result);
  CHECK(result->failures == 2);
  CHECK(result->recoveries == 1);
  CHECK(result->final_test_accuracy > 0.85);
}

TEST_CASE("a kill at a number of seconds happens while training runs") {
  scratch dir;
  auto opts = fault_run(consistency::ssp, fs::path(dir.path));
  opts.chief.slow_ms = {4, 4, 4};  // 150 clocks take well over half a second
  planned_kill k;
  k.target = planned_kill::role::evaluator;
  k.at_seconds = 0.2;
  opts.chief.kills = {k};
  auto result = simulate(std::move(opts));
  REQUIRE(result);
  auto kills = events(fs::path(dir.path) / "run.jsonl", "kill");
  REQUIRE(kills.size() == 1);
  CHECK(kills[0]["wall_s"].get<double>() >= 0.2);
  CHECK(kills[0]["clock"].get<int64_t>() < 150);
  CHECK(result->failures == 1);
  CHECK(result->recoveries == 1);
}

TEST_CASE("a shard killed at the last clock goes back to a checkpoint and finishes, whichever final step the kill meets") {
  // The kill at the run's last clock races the workers' done messages: its down message comes
  // while training or once the run is finishing; either way the run goes back and finishes
  // again, as the run without the kill (sync replays exactly). In one process the kill lands
  // before the final state is asked for; across processes a dying shard's failed answer to that
  // request ended the run ("collecting the final state failed: request_receiver_down", 1 of 6
  // chaos runs once): summary.cpp ignores it now, as its down message starts the steps over.
  // This test does not reach that window (it passed with the fix removed).
  scratch clean_dir;
  auto clean_opts = synthetic_run(consistency::sync, 3, 2, 40);
  clean_opts.chief.slow_ms = {0, 0, 0};
  auto clean = simulate(std::move(clean_opts));
  REQUIRE(clean);
  for (int round = 0; round < 12; ++round) {  // which final step the kill meets varies
    CAPTURE(round);
    scratch dir;
    auto opts = synthetic_run(consistency::sync, 3, 2, 40);
    opts.chief.slow_ms = {0, 0, 0};  // the done messages close behind the kill
    opts.chief.checkpoints.dir = (fs::path(dir.path) / "ckpt").string();
    opts.chief.checkpoints.every = 10;
    opts.chief.spec.checkpoint_every = 10;
    opts.chief.metrics = std::make_shared<metrics_file>((fs::path(dir.path) / "run.jsonl").string());
    opts.chief.kills = {kill(planned_kill::role::ps, round % 2, 40)};
    auto run = simulate(std::move(opts));
    REQUIRE(run);
    CHECK(run->clocks == 40);
    CHECK(run->failures == 1);
    CHECK(run->recoveries == 1);
    auto recoveries = events(fs::path(dir.path) / "run.jsonl", "recovery");
    REQUIRE(recoveries.size() == 1);
    CHECK(recoveries[0]["role"] == "ps");
    CHECK(run->final_test_accuracy == clean->final_test_accuracy);  // sync replays exactly
  }
}
