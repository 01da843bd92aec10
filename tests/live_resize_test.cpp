// Shards join and leave a running job (train_options::resizes, --resize ps=N@clock=C): in sync
// mode a run resized 2 -> 3 -> 1 -> 2 mid-run exports the very model.capnp of the same run that
// never resized, for a dense model and for a sparse one, with one resize event per change that
// says what moved; in ssp and async every push is applied once across resizes; what cannot be
// resized yet is refused, naming the option.
#include "actors/ps.hpp"

#include "tests/command_runner.hpp"
#include "tests/generated_criteo.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace actorps {
namespace {

using json = nlohmann::json;

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::vector<train_options::resize_at> two_three_one_two = {{3, 10}, {1, 20}, {2, 30}};

/// Runs `o` twice into `dir` (as is, and resized 2 -> 3 -> 1 -> 2), and checks the exports are
/// byte for byte the same and the resize events say what moved. Returns the resized run's
/// events.
std::vector<json> compare_resized(train_options o, const std::string& dir) {
  o.mode = consistency::sync;
  o.ps = 2;
  o.workers = 2;
  o.steps = 40;
  o.threads = 2;
  auto still = o;
  still.export_dir = dir + "/still";
  still.metrics = dir + "/still.jsonl";
  auto resized = o;
  resized.export_dir = dir + "/resized";
  resized.metrics = dir + "/resized.jsonl";
  resized.resizes = two_three_one_two;
  auto a = train(still);
  REQUIRE_MESSAGE(a, to_string(a.error()));
  auto b = train(resized);
  REQUIRE_MESSAGE(b, to_string(b.error()));
  CHECK(b->shards == 2);
  CHECK(b->clocks == 40);
  CHECK(b->failures == 0);
  const auto model = bytes_of(still.export_dir + "/1/model.capnp");
  CHECK(model.size() > 1000);
  CHECK(bytes_of(resized.export_dir + "/1/model.capnp") == model);  // byte for byte
  CHECK(test::metrics_events(still.metrics, "resize").empty());
  auto changes = test::metrics_events(resized.metrics, "resize");
  REQUIRE(changes.size() == 3);
  const int from[] = {2, 3, 1}, to[] = {3, 1, 2}, clock[] = {10, 20, 30};
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(changes[i]["from"] == from[i]);
    CHECK(changes[i]["to"] == to[i]);
    CHECK(changes[i]["clock"] == clock[i]);
    CHECK(changes[i]["bytes"].get<int64_t>() > 0);
    // the cut and the moves happen within the freeze, one after the other
    const double freeze = changes[i]["freeze_ms"], cut = changes[i]["cut_ms"],
                 move = changes[i]["move_ms"];
    CHECK(cut > 0);
    CHECK(move > 0);
    CHECK(cut + move <= freeze);
    // a change of shards only: both workers took the new shards where they were paused (their
    // data readers kept), none was started again
    CHECK(changes[i]["workers_kept"] == 2);
  }
  CHECK(test::metrics_events(resized.metrics, "resize_not_done").empty());
  return changes;
}

TEST_CASE("a dense model resized 2 -> 3 -> 1 -> 2 in sync mode exports the same bytes") {
  test::scratch_dir dir{"actorps_live_resize"};
  train_options o;
  o.model = "mlp:784-32-10";
  o.source.what = data_source::kind::synthetic;
  o.source.train_rows = 4096;
  o.source.test_rows = 512;
  auto changes = compare_resized(o, dir.path);
  for (const auto& c : changes) {
    CHECK(c["buckets"] == 0);  // no sparse table
    CHECK(c["blocks"].get<int64_t>() > 0);  // each change moves some dense blocks
    CHECK(c["copies_ahead"] == 0);  // no rows to copy ahead: the blocks move at the clock
    CHECK(c["copy_ms"] == -1);
  }
  // Shrinking to one shard moves every block the two others held; growing back from one
  // moves what the new shard is owed, not everything.
  CHECK(changes[1]["bytes"].get<int64_t>() > changes[2]["bytes"].get<int64_t>());
}

TEST_CASE("a sparse lr resized 2 -> 3 -> 1 -> 2 in sync mode exports the same bytes") {
  test::scratch_dir dir{"actorps_live_resize"};
  auto o = test::lr_on_generated_criteo(dir.path, 6000, 500);
  o.admit_after = 2;  // pending counts move with their buckets too
  o.copy_ahead = "always";  // whatever cores this machine has
  auto changes = compare_resized(o, dir.path);
  const int from[] = {2, 3, 1};
  // buckets_after_resize of 4096 round-robin buckets: 2 -> 3 moves a third, 3 -> 1 the two
  // thirds the others held, 1 -> 2 half
  CHECK(changes[0]["buckets"] == 1365);
  CHECK(changes[1]["buckets"] == 4096 - 1366);
  CHECK(changes[2]["buckets"] == 2048);
  // Only the moving rows were handed over (with the dense blocks and the files' framing): a
  // third of the rows in 2 -> 3 and half in 1 -> 2, not every shard's whole state (three times
  // and twice what moves). Each old shard hands over two files here, its dense blocks and the
  // rows for the one shard that gains buckets, each carrying the run's spec: its 4 096 bucket
  // placements (8 KB) are most of it.
  // The rows went ahead, copied while the run trained (from the first report after the change
  // before: the first copy finds only pending counts, admitted at a key's second push); the
  // hand-overs at the clocks held what changed since (and each copy and file carries the spec's
  // placements).
  for (std::size_t i : {1, 2}) {
    CAPTURE(i);
    CHECK(changes[i]["copies_ahead"].get<int64_t>() > 0);
    CHECK(changes[i]["copied_ahead_bytes"].get<int64_t>() > 0);
  }
  for (std::size_t i : {0, 2}) {
    CAPTURE(i);
    const double handed = changes[i]["handed_over_bytes"], moved = changes[i]["bytes"];
    const double copied = changes[i]["copied_ahead_bytes"];
    const double copies = changes[i]["copies_ahead"];
    CHECK(changes[i]["copy_ms"].get<double>() >= 0);
    CHECK(changes[i]["copy_from_clock"].get<int64_t>() < changes[i]["clock"].get<int64_t>());
    const double files = 2.0 * from[i] + copies, framing = files * (2 * 4096 + 1024);
    CHECK(handed + copied > 0.9 * moved);
    CHECK(handed + copied < 1.4 * moved + framing);
  }
}

TEST_CASE("with --copy-ahead never the rows move at the clock, the same bytes exported") {
  test::scratch_dir dir{"actorps_live_resize"};
  auto o = test::lr_on_generated_criteo(dir.path, 6000, 500);
  o.copy_ahead = "never";
  for (const auto& c : compare_resized(o, dir.path)) {
    CHECK(c["copies_ahead"] == 0);
    CHECK(c["copied_ahead_bytes"] == 0);
    CHECK(c["copy_from_clock"] == -1);
    // every moving row handed over at the clock (with the files' framing)
    CHECK(c["handed_over_bytes"].get<double>() > 0.9 * c["bytes"].get<double>());
  }
}

TEST_CASE("a shard spawned for a growth's copy ahead, lost before it: the next gets the copies") {
  // Sync: 2 -> 1 shard at clock 8, then 1 -> 3 at clock 20: ps:1 and ps:2 are spawned for the
  // growth as soon as the first change is made (its clock near: 8 clocks at least), take the
  // rows copied to them, and ps:2 is killed at clock 16; the shard the change spawns instead is
  // given those copies before its part, and the model is the never-resized run's.
  test::scratch_dir dir{"actorps_live_resize"};
  const std::string run = "simulate --no-progress --model lr --mode sync --ps 2 --workers 2 "
                          "--steps 30 --admit-after 1 --slow worker:0=10 --copy-ahead always "
                          + test::generated_criteo(dir.path, 6000, 500);
  auto still = test::run_actorps(run + " --export-dir " + dir.path + "/still");
  REQUIRE_MESSAGE(still.status == 0, still.output);
  const auto metrics = dir.path + "/killed.jsonl", out = dir.path + "/killed";
  const auto r = test::run_actorps(run + " --resize ps=1@clock=8 --resize ps=3@clock=20 "
                                   "--kill ps:2@clock=16 --export-dir " + out + " --metrics "
                                   + metrics);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(bytes_of(out + "/1/model.capnp") == bytes_of(dir.path + "/still/1/model.capnp"));
  CHECK_MESSAGE(test::contains(r.output, "fault injection: killing ps:2 at clock 16"), r.output);
  CHECK_MESSAGE(test::contains(r.output, "shard 2, spawned for the resize at clock 20, was lost"),
                r.output);
  const auto changes = test::metrics_events(metrics, "resize");
  REQUIRE(changes.size() == 2);
  CHECK(changes[1]["copies_ahead"].get<int64_t>() > 0);
  CHECK(changes[1]["copy_from_clock"].get<int64_t>() >= 8);
  CHECK(changes[1]["shards_lost"] == 0);  // lost before the change, not while the parts moved
}

TEST_CASE("ssp and async: shards resized 2 -> 4 -> 3 apply every push once") {
  // Worker 1 is slowed so worker 0 runs ahead (in ssp up to the bound): without the workers'
  // pause at the resize's clock, its pushes past that clock are in the shards' state and are
  // trained again after it, and a shard's updates exceed the pushes sent. The rows are copied
  // ahead while both push.
  test::scratch_dir dir{"actorps_live_resize"};
  const auto data = test::generated_criteo(dir.path, 20000, 4000);
  struct run_case {
    std::string mode, length, resizes;
    int clocks;
    double auc_noise;  // how far two runs of the mode land apart here, resized or not
  };
  // async by epochs: the resizes' clocks are checked against the run's length once the
  // streamed rows are counted (20 000 / 2 workers / 64 = 156 clocks)
  const run_case cases[] = {
    {"ssp", "--steps 300", "ps=4@clock=100 --resize ps=3@clock=200", 300, 0.02},
    // async with a slowed worker: the other's pushes interleave by chance (0.014 seen apart)
    {"async", "--epochs 1", "ps=4@clock=50 --resize ps=3@clock=100", 156, 0.04}};
  for (const auto& c : cases) {
    CAPTURE(c.mode);
    json summary[2];
    for (int resized = 0; resized < 2; ++resized) {
      const auto metrics = dir.path + "/" + c.mode + std::to_string(resized) + ".jsonl";
      const auto r = test::run_actorps(
        "simulate --no-progress --model lr --mode " + c.mode + " --ps 2 --workers 2 " + c.length
        + " --slow worker:1=1 " + data + " --metrics " + metrics
        + (resized ? " --copy-ahead always --resize " + c.resizes : ""));
      REQUIRE_MESSAGE(r.status == 0, r.output);
      const auto ends = test::metrics_events(metrics, "summary");
      REQUIRE(ends.size() == 1);
      summary[resized] = ends.front();
      const auto changes = test::metrics_events(metrics, "resize");
      REQUIRE(changes.size() == (resized ? 2u : 0u));
      for (const auto& change : changes) {
        CHECK(change["retrained_samples"] == 0);
        // a worker running ahead (ssp) or with its round open when asked took the new shards
        // once it paused: none was started again
        CHECK(change["workers_kept"] == 2);
      }
    }
    const auto& b = summary[1];
    CAPTURE(b.dump());
    CHECK(b["shards"] == 3);
    CHECK(b["clocks"] == c.clocks);
    CHECK(b["samples"] == 2 * c.clocks * 64);  // every batch trained once
    CHECK(b["samples"] == b["planned_samples"]);
    // Each push is one update of every shard; a shard spawned at a resize took its updates
    // with its state.
    const int pushes = 2 * c.clocks;
    CHECK(b["updates_per_shard"] == json::array({pushes, pushes, pushes}));
    CHECK(summary[0]["updates_per_shard"] == json::array({pushes, pushes}));
    const double auc = b["final_test_auc"], still = summary[0]["final_test_auc"];
    CHECK(auc > 0.6);
    CHECK(std::abs(auc - still) < c.auc_noise);  // the mode's own noise: nothing more
  }
}

TEST_CASE("a shard killed while the parts of a resize move: given its part again, or a rollback") {
  // Sync, the never-resized run's model either way. ps:2 is new in 2 -> 3 (it held nothing
  // before): spawned again and given its part again, no clock lost. ps:0 is a shard before each
  // change (the rows of the buckets it keeps are only in it): the run goes back to the newest
  // checkpoint, the one written at the change's clock, restored at the new size.
  test::scratch_dir dir{"actorps_live_resize"};
  const std::string run = "simulate --no-progress --model lr --mode sync --ps 2 --workers 2 "
                          "--steps 40 --admit-after 2 " + test::generated_criteo(dir.path, 6000, 500);
  auto still = test::run_actorps(run + " --export-dir " + dir.path + "/still");
  REQUIRE_MESSAGE(still.status == 0, still.output);
  const std::string resizes = " --resize ps=3@clock=10 --resize ps=1@clock=20 ";
  const auto metrics = dir.path + "/killed.jsonl", out = dir.path + "/killed";
  SUBCASE("a new shard: given its part again, after the rows copied ahead to the one lost") {
    const auto r = test::run_actorps(run + resizes + "--copy-ahead always --slow worker:0=3 "
                                     "--kill ps:2@resize=1 --export-dir " + out + " --metrics "
                                     + metrics);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    CHECK(bytes_of(out + "/1/model.capnp") == bytes_of(dir.path + "/still/1/model.capnp"));
    const auto changes = test::metrics_events(metrics, "resize");
    REQUIRE(changes.size() == 2);
    CHECK(changes[0]["shards_lost"] == 1);
    CHECK(changes[1]["shards_lost"] == 0);
    CHECK(test::metrics_events(metrics, "failure").size() == 1);
    const auto recovered = test::metrics_events(metrics, "recovery");
    REQUIRE(recovered.size() == 1);
    CHECK(recovered[0]["lost_clocks"] == 0);  // given its part at the change's clock
  }
  SUBCASE("a shard from before the change: back to the checkpoint of its clock") {
    const auto r = test::run_actorps(run + resizes + "--kill ps:0@resize=1 --kill ps:0@resize=2 "
                                     "--checkpoint-dir " + dir.path + "/ckpt "
                                     "--checkpoint-every 10 --export-dir " + out + " --metrics "
                                     + metrics);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    CHECK(bytes_of(out + "/1/model.capnp") == bytes_of(dir.path + "/still/1/model.capnp"));
    // both changes made by restoring the checkpoint at their clock into the new size
    CHECK(test::metrics_events(metrics, "resize").empty());
    CHECK(test::metrics_events(metrics, "failure").size() == 2);
    const auto recovered = test::metrics_events(metrics, "recovery");
    REQUIRE(recovered.size() == 2);
    CHECK(recovered[0]["clock"] == 10);
    CHECK(recovered[1]["clock"] == 20);
    const auto summary = test::metrics_events(metrics, "summary");
    REQUIRE(summary.size() == 1);
    CHECK(summary[0]["shards"] == 1);
  }
  SUBCASE("a shard from before the change, no checkpoints: the run fails, saying so") {
    const auto r = test::run_actorps(run + resizes + "--kill ps:0@resize=1");
    CHECK(r.status != 0);
    CHECK_MESSAGE(test::contains(r.output, "parameter shard 0 lost"), r.output);
    CHECK_MESSAGE(test::contains(r.output, "no --checkpoint-dir"), r.output);
  }
}

TEST_CASE("with --replicas 1 the shards of each new size get standbys that take over") {
  // 2 -> 3 at clock 10, 3 -> 1 at clock 30; ps:1 killed at 20 and ps:0 at 45, each a shard of
  // the size then. Sync: a fail-over (or, were a standby not ready yet, a rollback to the
  // checkpoint) keeps the run's bytes those of the run never resized nor killed. The rows are
  // copied ahead: the kill at 20 abandons the copy for 30, which starts again after it.
  test::scratch_dir dir{"actorps_live_resize"};
  const std::string run = "simulate --no-progress --model lr --mode sync --ps 2 --workers 2 "
                          "--steps 60 " + test::generated_criteo(dir.path, 6000, 500);
  auto still = test::run_actorps(run + " --export-dir " + dir.path + "/still");
  REQUIRE_MESSAGE(still.status == 0, still.output);
  const auto metrics = dir.path + "/standbys.jsonl";
  const auto r = test::run_actorps(
    run + " --replicas 1 --slow worker:0=2 --checkpoint-dir " + dir.path + "/ckpt "
    "--checkpoint-every 5 --resize ps=3@clock=10 --resize ps=1@clock=30 --kill ps:1@clock=20 "
    "--kill ps:0@clock=45 --copy-ahead always --export-dir " + dir.path + "/resized --metrics "
    + metrics);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(bytes_of(dir.path + "/resized/1/model.capnp")
        == bytes_of(dir.path + "/still/1/model.capnp"));
  CHECK(test::metrics_events(metrics, "resize").size() == 2);
  CHECK(test::metrics_events(metrics, "kill").size() == 2);
  // standbys built again after each resize: 3, then 1 (and one after each fail-over)
  CHECK(test::metrics_events(metrics, "rereplicated").size() >= 4);
  const auto failovers = test::metrics_events(metrics, "failover").size();
  MESSAGE("fail-overs: " << failovers << " of 2 losses (the others went back to a checkpoint)");
}

/// The export version of `dir` (a version directory) as a whole model.capnp: its own, or its
/// chain folded by `actorps export --consolidate` into `scratch`.
std::string whole_model(const std::string& dir, const std::string& scratch) {
  if (std::filesystem::exists(dir + "/model.capnp")) return bytes_of(dir + "/model.capnp");
  std::filesystem::remove_all(scratch);
  const auto r = test::run_actorps("export --consolidate " + dir + " --export-dir " + scratch);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  return bytes_of(scratch + "/1/model.capnp");
}

TEST_CASE("export versions while the shards resize: each the never-resized run's at its clock") {
  // Versions every 5 clocks, every 4th full; 2 -> 3 at 12, 3 -> 1 at 23. The versions asked of
  // the shards before a resize are skipped (their states were replaced); the next ones come
  // from the new shards whole, a full version the chain goes on from.
  test::scratch_dir dir{"actorps_live_resize"};
  const std::string run = "simulate --no-progress --model lr --mode sync --ps 2 --workers 2 "
                          "--steps 60 --export-every 5 --full-export-every 4 --slow worker:0=3 "
                          + test::generated_criteo(dir.path, 6000, 500);
  std::map<int64_t, json> versions[2];  // by clock, each run's export events
  for (int resized = 0; resized < 2; ++resized) {
    const auto name = std::string(resized ? "resized" : "still");
    const auto r = test::run_actorps(
      run + " --export-dir " + dir.path + "/" + name + " --metrics " + dir.path + "/" + name
      + ".jsonl" + (resized ? " --resize ps=3@clock=12 --resize ps=1@clock=23" : ""));
    REQUIRE_MESSAGE(r.status == 0, r.output);
    for (const auto& e : test::metrics_events(dir.path + "/" + name + ".jsonl", "export"))
      versions[resized][e["clock"].get<int64_t>()] = e;
  }
  int compared = 0, full_after_resize = 0;
  for (const auto& [clock, e] : versions[1]) {
    CAPTURE(clock);
    if (e["kind"] == "full" && clock > 12) ++full_after_resize;
    auto still = versions[0].find(clock);
    if (still == versions[0].end()) continue;
    const auto v = std::to_string(e["version"].get<int64_t>());
    const auto w = std::to_string(still->second["version"].get<int64_t>());
    CHECK(whole_model(dir.path + "/resized/" + v, dir.path + "/fold-a")
          == whole_model(dir.path + "/still/" + w, dir.path + "/fold-b"));
    ++compared;
  }
  CHECK(compared >= 3);
  CHECK(full_after_resize >= 1);
}

TEST_CASE("resizes train() cannot run are refused before training, naming the option") {
  auto refusal = [](auto set) {
    train_options o;
    o.model = "mlp:784-16-10";
    o.source.what = data_source::kind::synthetic;
    o.source.train_rows = 512;
    o.source.test_rows = 128;
    o.mode = consistency::sync;
    o.steps = 20;
    o.threads = 2;
    o.resizes = {{3, 10}};
    set(o);
    auto result = train(o);
    REQUIRE_FALSE(result);
    return to_string(result.error());
  };
  CHECK(test::contains(refusal([](train_options& o) { o.resizes = {{3, 20}}; }),
                       "--resize: ps=3@clock=20: the clock is 1 to 19"));
  CHECK(test::contains(refusal([](train_options& o) { o.resizes = {{3, 10}, {1, 10}}; }),
                       "ps=1@clock=10: each resize's clock is after the one before"));
  CHECK(test::contains(refusal([](train_options& o) { o.resizes = {{0, 10}}; }),
                       "--resize ps=0@clock=10: the number of shards is 1 to 65536"));
}

TEST_CASE("simulate --resize refuses a value it cannot run, naming the flag") {
  const std::string base = "simulate --dataset synthetic --synthetic-rows 512 --steps 10 ";
  auto r = test::run_actorps(base + "--mode sync --resize ps=3@clock=5 --kill ps:3@resize=1");
  CHECK(r.status == 2);
  CHECK_MESSAGE(test::contains(r.output, "--kill ps:3@resize=1: that resize leaves 3 shards"),
                r.output);
  r = test::run_actorps(base + "--mode sync --kill ps:0@resize=1");
  CHECK(r.status == 2);
  CHECK_MESSAGE(test::contains(r.output, "--kill ps:0@resize=1: there are 0 resizes"), r.output);
  r = test::run_actorps(base + "--mode sync --resize ps=x");
  CHECK(r.status == 2);
  CHECK_MESSAGE(test::contains(r.output, "--resize ps=x: expected ps=N@clock=C"), r.output);
  r = test::run_actorps(base + "--mode sync --resize ps=2@clock=10");
  CHECK(r.status == 2);
  CHECK_MESSAGE(test::contains(r.output, "--resize: ps=2@clock=10: the clock is 1 to 9"),
                r.output);
  r = test::run_actorps(base + "--mode sync --resize ps=3@clock=5 --copy-ahead sometimes");
  CHECK(r.status == 2);
  CHECK_MESSAGE(test::contains(r.output, "--copy-ahead"), r.output);
  CHECK_MESSAGE(test::contains(r.output, "must be auto, always or never"), r.output);
  // a shard a planned growth adds may be named by a kill at a clock, no other
  r = test::run_actorps(base + "--mode sync --resize ps=3@clock=5 --kill ps:3@clock=2");
  CHECK(r.status == 2);
  CHECK_MESSAGE(test::contains(r.output, "there is no ps:3 (3 in this run)"), r.output);
}

} // namespace
} // namespace actorps
