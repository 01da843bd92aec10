// A replaced worker trains what its predecessor had not: `actorps simulate --kill worker:1@...`
// from the command line, dense (synthetic) and streamed (DLRM on a generated Criteo set). The
// workers' own train events, read back from the metrics file, must cover each worker's part of
// the epoch once — the same rows, per worker, as the run without the kill — and the summary must
// say so too. A rollback to a checkpoint counts what it trains again.
#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <string>

namespace actorps {

namespace {

/// What the train events of one run say, per worker.
struct trained {
  std::map<int, int64_t> samples, events;
  std::map<int, int64_t> last_clock;
  int64_t total = 0;
};

trained train_events(const std::string& metrics) {
  trained out;
  for (const auto& e : test::metrics_events(metrics, "train")) {
    auto w = e["worker"].get<int>();
    auto n = e["samples"].get<int64_t>();
    out.samples[w] += n;
    ++out.events[w];
    out.last_clock[w] = std::max(out.last_clock[w], e["clock"].get<int64_t>());
    out.total += n;
  }
  return out;
}

/// worker:1's train events before its first failure event: the minibatches its first process
/// trained, as the chief heard of them.
int64_t trained_before_failure(const std::string& metrics) {
  int64_t n = 0;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    auto e = nlohmann::json::parse(line);
    if (e["event"] == "failure" && e["role"] == "worker" && e["index"] == 1) break;
    if (e["event"] == "train" && e["worker"] == 1) ++n;
  }
  return n;
}

/// Runs `run` without and with `--kill worker:1@clock=C` and checks the replacement resumed
/// its predecessor's data: every worker's rows once, none skipped.
/// With `checkpoints`, each run writes them (every 40 clocks) into a directory of its own.
void check_resumed(const std::string& run, const std::string& dir, int64_t kill_clock,
                   bool whole_batches, bool checkpoints) {
  const auto clean_metrics = dir + "/clean.jsonl", killed_metrics = dir + "/killed.jsonl";
  auto into = [&](const std::string& name) {
    return checkpoints ? " --checkpoint-every 40 --checkpoint-dir " + dir + "/" + name : "";
  };
  const auto clean = test::run_actorps(run + " --metrics " + clean_metrics + into("clean"));
  REQUIRE_MESSAGE(clean.status == 0, clean.output);
  const auto killed = test::run_actorps(run + " --metrics " + killed_metrics + into("killed")
                                        + " --kill worker:1@clock=" + std::to_string(kill_clock));
  REQUIRE_MESSAGE(killed.status == 0, killed.output);
  auto want = train_events(clean_metrics), got = train_events(killed_metrics);
  REQUIRE(test::metrics_events(killed_metrics, "kill").size() == 1);
  auto recoveries = test::metrics_events(killed_metrics, "recovery");
  REQUIRE(recoveries.size() == 1);
  const auto& r = recoveries[0];
  CHECK(r["role"] == "worker");
  CHECK(r["skipped_samples"] == 0);
  CHECK(r["lost_clocks"] == 0);
  // it goes on with the minibatch after its predecessor's last
  CHECK(r["resumed_batch"].get<int64_t>() == trained_before_failure(killed_metrics));
  auto entered = r["clock"].get<int64_t>();
  auto offset = entered - r["resumed_batch"].get<int64_t>();
  CHECK(r["behind_clocks"].get<int64_t>() == offset);
  CHECK(offset > 0);  // else the run would say nothing of whether it ran past the others
  // every worker trained its part once: the same rows, in as many minibatches, as without the kill
  for (int w = 0; w < 2; ++w) {
    CAPTURE(w);
    CHECK(got.samples[w] == want.samples[w]);
    CHECK(got.events[w] == want.events[w]);
  }
  CHECK(got.total == want.total);
  // the replacement ran past the others' last clock by as many clocks as it entered behind
  CHECK(got.last_clock[1] == want.last_clock[1] + offset);
  CHECK(got.last_clock[0] == want.last_clock[0]);
  auto summary = test::metrics_summary(killed_metrics);
  REQUIRE(!summary.is_null());
  CHECK(summary["samples"] == test::metrics_summary(clean_metrics)["samples"]);
  // (a streamed part's last minibatch may be short, which a count of batches cannot see)
  if (whole_batches) CHECK(summary["samples"].get<int64_t>() == got.total);
  CHECK(summary["failures"] == 1);
}

} // namespace

TEST_CASE("simulate --kill worker:1: the replacement trains its predecessor's rest (dense)") {
  // worker:1 slower: worker:0 runs ahead (by up to 3 clocks in ssp, as far as it goes in
  // async), and the replacement enters at its clock, behind its predecessor's last
  for (std::string mode : {"ssp --staleness 3", "async"}) {
    CAPTURE(mode);
    test::scratch_dir dir("actorps_worker_resume");
    check_resumed("simulate --no-progress --dataset synthetic --synthetic-rows 8192 --epochs 1"
                  " --batch 32 --workers 2 --ps 2 --eval-every 0 --mode " + mode
                  + " --slow worker:1=2",
                  dir.path, 30, true, true);
    // the final checkpoint is at the clock the run really ended at
    auto checkpoints = test::metrics_events(dir.path + "/killed.jsonl", "checkpoint");
    REQUIRE(!checkpoints.empty());
    auto last_train = train_events(dir.path + "/killed.jsonl").last_clock[1];
    CHECK(checkpoints.back()["clock"].get<int64_t>() == last_train + 1);
    CHECK(test::metrics_events(dir.path + "/killed.jsonl", "checkpoint_failed").empty());
  }
}

TEST_CASE("simulate --kill worker:1: the replacement trains its predecessor's rest (criteo)") {
  test::scratch_dir dir("actorps_worker_resume_criteo");
  const auto gen = test::run_actorps("gen-data criteo --out " + dir.path
                                     + " --rows 6000 --test-rows 300 --seed 5");
  REQUIRE_MESSAGE(gen.status == 0, gen.output);
  check_resumed("simulate --no-progress --model dlrm --dataset criteo:" + dir.path
                  + "/train.tsv --test " + dir.path + "/test.tsv --epochs 1 --batch 64"
                  + " --workers 2 --ps 2 --mode ssp --staleness 3 --eval-every 0"
                  + " --slow worker:1=3",
                dir.path, 12, false, false);
}

TEST_CASE("simulate --kill ps:0: a rollback counts the rows it trains again") {
  test::scratch_dir dir("actorps_rollback_retrained");
  const std::string run = "simulate --no-progress --dataset synthetic --synthetic-rows 8192"
                          " --epochs 1 --batch 32 --workers 2 --ps 2 --eval-every 0 --mode ssp --staleness 3"
                          " --slow worker:1=2 --checkpoint-every 30 --checkpoint-dir "
                          + dir.path;
  const auto clean = test::run_actorps(run + "/clean --metrics " + dir.path + "/clean.jsonl");
  REQUIRE_MESSAGE(clean.status == 0, clean.output);
  // worker:1 replaced first (its data moved on), then a shard lost: back to a checkpoint
  const auto metrics = dir.path + "/killed.jsonl";
  const auto killed = test::run_actorps(run + "/killed --metrics " + metrics
                                        + " --kill worker:1@clock=20,ps:0@clock=75");
  REQUIRE_MESSAGE(killed.status == 0, killed.output);
  auto recoveries = test::metrics_events(metrics, "recovery");
  REQUIRE(recoveries.size() == 2);
  const auto& rollback = recoveries[1];
  REQUIRE(rollback["role"] == "ps");
  auto retrained = rollback["retrained_samples"].get<int64_t>();
  CHECK(retrained > 0);
  CHECK(rollback["skipped_samples"] == 0);
  // the workers' own account: the epoch once, plus exactly what the rollback said it redid
  auto want = train_events(dir.path + "/clean.jsonl"), got = train_events(metrics);
  CHECK(got.total == want.total + retrained);
}

} // namespace actorps
