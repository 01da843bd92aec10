// Workers join and leave a running job (--resize workers=N@clock=C, train_options::resizes):
// every minibatch no worker had trained at the change is handed to exactly one worker of the
// new number, so the run trains the same minibatches as the run never resized. The observers
// are the summary's minibatch count and the keys the shards gave rows: in sync mode (a clock's
// pushes merged, each key counted once a clock) every key pushed gets a row, so a minibatch
// never trained leaves out the keys only it holds; in ssp and async (each push counted on its
// own) --admit-after 2 gives a key a row once two minibatches held it, whichever worker trained
// them and in whatever order, so one missed or doubled minibatch moves some key across it.
#include "actors/ps.hpp"
#include "actors/serving/model_readers.hpp"

#include "tests/command_runner.hpp"
#include "tests/generated_criteo.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace actorps {
namespace {

using json = nlohmann::json;

/// Every key with a row in the export at `dir` (its version 1).
std::set<uint64_t> exported_keys(const std::string& dir) {
  const auto path = dir + "/1/model.capnp";
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, path);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::set<uint64_t> out;
  read_model_root(bytes, path, [&](exported::ExportedModel::Reader root) {
    for (const auto& field : read_ctr_model(root, path).fields)
      out.insert(field.keys.begin(), field.keys.end());
  });
  return out;
}

TEST_CASE("sync: workers 2 -> 4 -> 3 (shards 2 -> 3 -> 3) train every minibatch once") {
  test::scratch_dir dir{"actorps_worker_resize"};
  auto o = test::lr_on_generated_criteo(dir.path, 6000, 500);
  o.admit_after = 1;
  o.mode = consistency::sync;
  o.ps = 2;
  o.workers = 2;
  o.steps = 40;
  o.threads = 2;
  auto still = o;
  still.export_dir = dir.path + "/still";
  auto resized = o;
  resized.export_dir = dir.path + "/resized";
  resized.metrics = dir.path + "/resized.jsonl";
  // at 10: 60 minibatches left, 15 for each of 4 workers; at 20: 4 x 5 left, 7 + 7 + 6
  resized.resizes = {{3, 10, 4}, {0, 20, 3}};
  auto a = train(still);
  REQUIRE_MESSAGE(a, to_string(a.error()));
  auto b = train(resized);
  REQUIRE_MESSAGE(b, to_string(b.error()));
  CHECK(a->samples == 2 * 40 * 64);
  CHECK(b->samples == a->samples);
  CHECK(b->planned_samples == a->planned_samples);
  CHECK(b->workers == 3);
  CHECK(b->shards == 3);
  CHECK(b->worker_clocks == std::vector<int64_t>{7, 7, 6});  // each of its share, from clock 20
  CHECK(b->clocks == 27);
  CHECK(b->failures == 0);
  const auto keys = exported_keys(still.export_dir);
  CHECK(keys.size() > 1000);
  CHECK(exported_keys(resized.export_dir) == keys);  // every minibatch trained, as many as planned
  CHECK(std::abs(b->final_test_auc - a->final_test_auc) < 0.02);
  const auto changes = test::metrics_events(resized.metrics, "resize");
  REQUIRE(changes.size() == 2);
  CHECK(changes[0]["workers_from"] == 2);
  CHECK(changes[0]["workers_to"] == 4);
  CHECK(changes[0]["from"] == 2);
  CHECK(changes[0]["to"] == 3);
  CHECK(changes[1]["workers_from"] == 4);
  CHECK(changes[1]["workers_to"] == 3);
  CHECK(changes[1]["from"] == 3);
  CHECK(changes[1]["to"] == 3);
  for (const auto& c : changes) CHECK(c["retrained_samples"] == 0);
}

TEST_CASE("a shard from before a change of shards and workers killed in it: back, every minibatch once") {
  // ps:0 held the rows of the buckets it keeps: lost while the parts move, the run goes back to
  // the checkpoint written at the change's clock and makes the change by restoring it, at the
  // new number of shards and with the untrained minibatches shared out among the new number of
  // workers. Sync: the keys with rows are the never-resized run's (no minibatch missed or
  // trained twice), and the summary counts each minibatch once.
  test::scratch_dir dir{"actorps_worker_resize"};
  const std::string run = "simulate --no-progress --model lr --mode sync --ps 2 --workers 2 "
                          "--steps 40 --admit-after 1 "
                          + test::generated_criteo(dir.path, 6000, 500);
  const auto still = test::run_actorps(run + " --export-dir " + dir.path + "/still");
  REQUIRE_MESSAGE(still.status == 0, still.output);
  const auto metrics = dir.path + "/killed.jsonl", out = dir.path + "/killed";
  const auto r = test::run_actorps(run + " --resize ps=3,workers=4@clock=10 --kill ps:0@resize=1 "
                                   "--checkpoint-dir " + dir.path + "/ckpt --checkpoint-every 10 "
                                   "--export-dir " + out + " --metrics " + metrics);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  const auto keys = exported_keys(dir.path + "/still");
  CHECK(keys.size() > 1000);
  CHECK(exported_keys(out) == keys);
  CHECK(test::metrics_events(metrics, "resize").empty());  // made by the rollback's restore
  CHECK(test::metrics_events(metrics, "failure").size() == 1);
  const auto recovered = test::metrics_events(metrics, "recovery");
  REQUIRE(recovered.size() == 1);
  CHECK(recovered[0]["clock"] == 10);
  const auto summary = test::metrics_events(metrics, "summary");
  REQUIRE(summary.size() == 1);
  CAPTURE(summary[0].dump());
  CHECK(summary[0]["shards"] == 3);
  CHECK(summary[0]["workers"] == 4);
  CHECK(summary[0]["samples"] == 2 * 40 * 64);  // every minibatch once, none trained again
  CHECK(summary[0]["planned_samples"] == 2 * 40 * 64);
}

TEST_CASE("ssp and async: shards and workers 2 -> 4 -> 3 train every minibatch once") {
  test::scratch_dir dir{"actorps_worker_resize"};
  const auto data = test::generated_criteo(dir.path, 20000, 4000);
  struct run_case {
    std::string mode, length, resizes;
    int64_t batches;    // the run's minibatches: 2 workers x its clocks
    double auc_noise;   // how far two runs of the mode land apart here, resized or not
  };
  // 20 000 rows / 2 workers / 64 = 156 clocks an epoch
  const run_case cases[] = {
    {"ssp", "--steps 300", "ps=4,workers=4@clock=100 --resize ps=3,workers=3@clock=150", 600,
     0.02},
    {"async", "--epochs 1", "ps=4,workers=4@clock=50 --resize ps=3,workers=3@clock=80", 312,
     0.04}};
  for (const auto& c : cases) {
    CAPTURE(c.mode);
    json summary[2];
    std::set<uint64_t> keys[2];
    for (int resized = 0; resized < 2; ++resized) {
      const auto run = dir.path + "/" + c.mode + std::to_string(resized);
      const auto metrics = run + ".jsonl";
      const auto r = test::run_actorps(
        "simulate --no-progress --model lr --admit-after 2 --mode " + c.mode
        + " --ps 2 --workers 2 " + c.length + " --slow worker:1=1 " + data + " --metrics "
        + metrics + " --export-dir " + run + (resized ? " --resize " + c.resizes : ""));
      REQUIRE_MESSAGE(r.status == 0, r.output);
      const auto ends = test::metrics_events(metrics, "summary");
      REQUIRE(ends.size() == 1);
      summary[resized] = ends.front();
      const auto changes = test::metrics_events(metrics, "resize");
      REQUIRE(changes.size() == (resized ? 2u : 0u));
      for (const auto& change : changes) {
        CHECK(change["retrained_samples"] == 0);
        CHECK(change["workers_kept"] == 0);  // a change of workers starts every one afresh
      }
      keys[resized] = exported_keys(run);
    }
    CHECK(keys[0].size() > 1000);
    CHECK(keys[1] == keys[0]);  // each minibatch pushed once: every key counted as often
    const auto& b = summary[1];
    CAPTURE(b.dump());
    CHECK(b["shards"] == 3);
    CHECK(b["workers"] == 3);
    CHECK(b["samples"] == c.batches * 64);  // every minibatch trained once
    CHECK(b["samples"] == b["planned_samples"]);
    CHECK(summary[0]["samples"] == c.batches * 64);
    // each push is one update of every shard
    CHECK(b["updates_per_shard"] == json::array({c.batches, c.batches, c.batches}));
    const double auc = b["final_test_auc"], still = summary[0]["final_test_auc"];
    CHECK(auc > 0.6);
    CHECK(std::abs(auc - still) < c.auc_noise);
  }
}

TEST_CASE("--resize workers= is checked as ps= is, naming the flag") {
  const std::string base = "simulate --dataset synthetic --synthetic-rows 512 --steps 10 ";
  auto r = test::run_actorps(base + "--mode sync --resize workers=0@clock=5");
  CHECK(r.status == 2);
  CHECK_MESSAGE(test::contains(r.output, "--resize workers=0@clock=5: the number of workers is 1 "
                                         "to 65536"), r.output);
  r = test::run_actorps(base + "--mode sync --resize ps=2,workers=x@clock=5");
  CHECK(r.status == 2);
  CHECK_MESSAGE(test::contains(r.output, "--resize ps=2,workers=x@clock=5: expected ps=N@clock=C"),
                r.output);
}

} // namespace
} // namespace actorps
