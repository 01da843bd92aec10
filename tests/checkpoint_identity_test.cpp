// A checkpoint carries its run's identity (model, dataset and its size, seed, batch,
// optimizer, sparse tables): --resume refuses another run's, another dataset's, or one at or
// past the run's end, naming the difference; a larger --steps/--epochs extends the run, says
// what its learning-rate schedule does, and counts samples/s over the resumed run alone.
// (Another number of workers goes on: worker_resume_test.sh.)

#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

using actorps::test::contains;
using actorps::test::metrics_events;
using actorps::test::metrics_summary;
using actorps::test::run_actorps;
using actorps::test::scratch_dir;

namespace {

const std::string base = "simulate --dataset synthetic --model 784-32-10 --eval-every 0 "
                         "--no-progress --checkpoint-every 20 ";

std::string run_in(const std::string& dir, int64_t steps) {
  return base + "--steps " + std::to_string(steps) + " --checkpoint-dir " + dir;
}



} // namespace

TEST_CASE("--resume refuses another run's checkpoint, naming the difference") {
  scratch_dir tmp("actorps_identity");
  REQUIRE(run_actorps(run_in(tmp.path, 40)).status == 0);
  struct other_run {
    std::string flags, difference;
  };
  for (const auto& c : std::vector<other_run>{
         {"--seed 2", "the checkpoint's seed is 1, this run's 2"},
         {"--synthetic-rows 4096", "the checkpoint's dataset synthetic size is 8192 rows, this run's 4096 rows"},
         {"--batch 32", "the checkpoint's batch is 64, this run's 32"},
         {"--optimizer adam", "the checkpoint's optimizer is momentum, this run's adam"},
       }) {
    CAPTURE(c.flags);
    auto r = run_actorps(run_in(tmp.path, 80) + " --resume " + c.flags);
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(contains(r.output, "cannot continue this run: " + c.difference));
  }
}

TEST_CASE("--resume refuses a checkpoint of another dataset file") {
  scratch_dir tmp("actorps_identity_csv");
  for (const char* name : {"a.csv", "b.csv", "test.csv"}) {  // the same rows under two names
    std::ofstream out(tmp.path + "/" + name);
    for (int i = 0; i < 256; ++i) out << i % 3 << "," << i % 7 << "," << i % 5 << "\n";
  }
  auto run = [&](const std::string& train, const std::string& extra) {
    return run_actorps("simulate --dataset csv:" + tmp.path + "/" + train + " --test " + tmp.path
                       + "/test.csv --model 2-4-3 --batch 16 --eval-every 0 --checkpoint-every 10 "
                         "--no-progress --checkpoint-dir " + tmp.path + "/ckpt " + extra);
  };
  REQUIRE(run("a.csv", "--steps 20").status == 0);
  auto other = run("b.csv", "--steps 30 --resume");
  INFO(other.output);
  CHECK(other.status == 2);
  CHECK(contains(other.output, "the checkpoint's dataset is csv:" + tmp.path + "/a.csv, this run's csv:"
                                 + tmp.path + "/b.csv"));
}

TEST_CASE("--resume refuses a checkpoint at or past the run's end") {
  scratch_dir tmp("actorps_identity_end");
  REQUIRE(run_actorps(run_in(tmp.path, 60)).status == 0);
  for (int64_t steps : {60, 40}) {
    CAPTURE(steps);
    auto r = run_actorps(run_in(tmp.path, steps) + " --resume");
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(contains(r.output, "ckpt-000000000060 is at clock 60 and this run ends at clock "
                               + std::to_string(steps) + ": nothing is left to train"));
    CHECK_FALSE(contains(r.output, "samples/s"));
  }
}

TEST_CASE("a larger --steps extends a resumed run: samples/s is the resumed run's own") {
  scratch_dir tmp("actorps_identity_extend");
  auto first = run_actorps(run_in(tmp.path, 60) + " --metrics " + tmp.path + "/first.jsonl");
  REQUIRE(first.status == 0);
  auto extended = run_actorps(run_in(tmp.path, 80) + " --resume --lr-schedule cosine --metrics "
                              + tmp.path + "/extended.jsonl");
  INFO(extended.output);
  REQUIRE(extended.status == 0);
  CHECK(contains(extended.output, "resuming from " + tmp.path + "/ckpt-000000000060 (clock 60)"));
  CHECK(contains(extended.output, "resume: the run is now 80 clocks long (it was 60); the cosine "
                                  "learning-rate schedule is re-evaluated over the new length"));
  CHECK(contains(extended.output, "resumed from clock 60"));
  auto sum = metrics_summary(tmp.path + "/extended.jsonl");
  CHECK(sum["samples"] == 80 * 2 * 64);  // what the model has seen since clock 0
  // the rate is this run's 20 clocks of 2 workers over this run's time, not 80 clocks' worth
  const double this_run = sum["samples_per_s"].get<double>() * sum["wall_s"].get<double>();
  CHECK(std::fabs(this_run - 20 * 2 * 64) < 1.0);
  CHECK(contains(extended.output, "this run from clock 60: 2560 samples in"));
}

TEST_CASE("a replaced worker's redone clocks count once in the summary's samples") {
  scratch_dir tmp("actorps_identity_replaced");
  // worker 1 runs up to 2 clocks ahead of the slow worker 0; killed, its replacement enters at
  // the clock the shards agree on and computes those clocks again
  auto r = run_actorps("simulate --dataset synthetic --model 784-32-10 --steps 60 --eval-every 20 "
                       "--no-progress --slow worker:0=5 --kill worker:1@clock=20 --metrics "
                       + tmp.path + "/m.jsonl");
  INFO(r.output);
  REQUIRE(r.status == 0);
  auto sum = metrics_summary(tmp.path + "/m.jsonl");
  CHECK(sum["recoveries"] == 1);
  CHECK(sum["samples"] == 60 * 2 * 64);  // what the model holds, as the export reports it
  for (const auto& event : metrics_events(tmp.path + "/m.jsonl", "eval")) {
    // 8192 rows, 2 workers of 64-row batches: 64 clocks an epoch
    CHECK(event["epoch"].get<double>() == doctest::Approx(event["clock"].get<double>() / 64));
  }
}
