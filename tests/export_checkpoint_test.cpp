// `actorps export --checkpoint` as a user meets it: the final checkpoint exports exactly the
// model the run exported, an earlier one its own parameters, a corrupt newest one is reported
// and skipped, and bad input is refused with exit 2 naming the flag, nothing written.
#include "actors/storage/checkpoint_store.hpp"
#include "actors/serving/file_bytes.hpp"

#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace actorps {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::contains;
using test::run_actorps;

const std::string synthetic = "--dataset synthetic --synthetic-test-rows 512";


/// A short synthetic run checkpointing at clocks 20 and 40 and exporting at its end to e1/1.
struct checkpointed_run {
  test::scratch_dir scratch{"actorps_export_ckpt"};
  std::string ckpts = scratch.path + "/ckpt", e1 = scratch.path + "/e1";
  checkpointed_run() {
    auto r = run_actorps("simulate " + synthetic + " --model 784-32-10 --steps 40 "
                         "--synthetic-rows 2048 --eval-every 0 --no-progress --checkpoint-every 20 "
                         "--checkpoint-dir " + ckpts + " --export-dir " + e1);
    REQUIRE_MESSAGE(r.status == 0, r.output);
  }
  std::string ckpt(int64_t clock) const { return ckpts + "/" + checkpoint_dir_name(clock); }
};

/// `actorps export` of `checkpoint` into `out` with the run's data flags; must succeed and
/// write out/<version>.
test::command_result export_ok(const std::string& checkpoint, const std::string& out,
                               int version = 1) {
  auto r = run_actorps("export --checkpoint " + checkpoint + " --export-dir " + out + " "
                       + synthetic);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK_MESSAGE(contains(r.output, "exported to " + out + "/" + std::to_string(version)
                                    + " (model.capnp "), r.output);
  return r;
}

json metadata(const std::string& version) {
  return json::parse(read_file_bytes(version + "/metadata.json"));
}

void check_refused(const test::command_result& r, const std::string& message) {
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(contains(r.output, message));
}

} // namespace

TEST_CASE("export --checkpoint: the final checkpoint gives the run's own model, an earlier one its own") {
  checkpointed_run run;
  const std::string e2 = run.scratch.path + "/e2", e3 = run.scratch.path + "/e3";
  auto done = export_ok(run.ckpts, e2);  // the root: its newest checkpoint, clock 40
  CHECK(contains(done.output, "export: " + run.ckpt(40) + " (clock 40, 5120 samples)"));
  CHECK_FALSE(contains(done.output, "skipping"));
  const auto final_model = read_file_bytes(run.e1 + "/1/model.capnp");
  CHECK(read_file_bytes(e2 + "/1/model.capnp") == final_model);
  CHECK(read_file_bytes(e2 + "/1/model.onnx") == read_file_bytes(run.e1 + "/1/model.onnx"));
  const auto at_end = metadata(run.e1 + "/1"), exported = metadata(e2 + "/1");
  CHECK(exported["test_accuracy"] == at_end["test_accuracy"]);
  CHECK(exported["test_loss"] == at_end["test_loss"]);
  CHECK(exported["model"] == at_end["model"]);
  CHECK(exported["input"] == at_end["input"]);
  CHECK(exported["training"]["source"] == "checkpoint");
  CHECK(exported["training"]["clocks"] == 40);
  CHECK(exported["training"]["samples"] == at_end["training"]["samples"]);
  CHECK(exported["training"]["batch"] == 64);
  for (const char* key : {"mode", "staleness", "workers", "shards", "optimizer", "seed"})
    CHECK_MESSAGE(exported["training"][key] == at_end["training"][key], key);

  export_ok(run.ckpt(20), e3);  // one checkpoint directory: that one
  const auto earlier = metadata(e3 + "/1");
  CHECK(read_file_bytes(e3 + "/1/model.capnp") != final_model);
  CHECK(earlier["training"]["source"] == "checkpoint");
  CHECK(earlier["training"]["clocks"] == 20);
  CHECK(earlier["training"]["samples"] == 2 * 20 * 64);
  CHECK(earlier["test_accuracy"] > 0.2);  // trained a little, and evaluated on the real split

  export_ok(run.ckpts, e2, 2);  // a second export: version 2, version 1 untouched
  CHECK(test::dir_entries(e2) == std::set<std::string>{"1", "2"});
  CHECK(read_file_bytes(e2 + "/2/model.capnp") == final_model);
}

TEST_CASE("export --checkpoint skips a corrupt newest checkpoint, says so, and exports the one before") {
  checkpointed_run run;
  const auto shard = run.ckpt(40) + "/" + shard_file_name(0);
  auto bytes = read_file_bytes(shard);
  bytes[bytes.size() / 2] ^= 0x01;
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
  const std::string out = run.scratch.path + "/out", at20 = run.scratch.path + "/at20";
  auto r = export_ok(run.ckpts, out);
  CHECK(contains(r.output, "export: skipping " + shard + ": checksum "));
  CHECK(contains(r.output, "(corrupt)"));
  CHECK(contains(r.output, "export: " + run.ckpt(20) + " (clock 20, 2560 samples)"));
  CHECK(metadata(out + "/1")["training"]["clocks"] == 20);
  export_ok(run.ckpt(20), at20);
  CHECK(read_file_bytes(out + "/1/model.capnp") == read_file_bytes(at20 + "/1/model.capnp"));

  // Named directly, the corrupt checkpoint is refused: nothing is exported.
  check_refused(run_actorps("export --checkpoint " + run.ckpt(40) + " --export-dir " + out + " "
                            + synthetic),
                "actorps export: --checkpoint: " + shard + ": checksum ");
  CHECK(test::dir_entries(out) == std::set<std::string>{"1"});
}

TEST_CASE("export refuses missing flags, no checkpoint, an unwritable directory or unfitting data") {
  test::scratch_dir scratch("actorps_export_ckpt");
  const std::string out = scratch.path + "/out";
  check_refused(run_actorps("export --export-dir " + out), "--checkpoint DIR is required");
  check_refused(run_actorps("export --checkpoint " + scratch.path), "--export-dir OUT is required");
  check_refused(run_actorps("export --checkpoint " + scratch.path + " --export-dir " + out),
                "--checkpoint: " + scratch.path + ": no valid checkpoint (no ckpt-* directories)");
  check_refused(run_actorps("export --checkpoint " + scratch.path + "/none --export-dir " + out),
                "--checkpoint: " + scratch.path + "/none: no such checkpoint directory");
  check_refused(run_actorps("export --checkpoint"), "--checkpoint");
  CHECK_FALSE(fs::exists(out));

  // A real checkpoint of a 64-feature model: Fashion-MNIST's 784 features do not fit it.
  const std::string ckpts = scratch.path + "/ckpt";
  auto trained = run_actorps("simulate --dataset synthetic --model 64-16-10 --steps 10 "
                             "--eval-every 0 --no-progress --checkpoint-dir " + ckpts);
  REQUIRE_MESSAGE(trained.status == 0, trained.output);
  check_refused(run_actorps("export --checkpoint " + ckpts + " --export-dir " + out),
                "--dataset fashion-mnist: the data has 784 features per row, the model takes 64");
  check_refused(run_actorps("export --checkpoint " + ckpts + " --export-dir " + out
                            + " --dataset imagenet"),
                "--dataset must be fashion-mnist or synthetic (got imagenet)");
  CHECK((!fs::exists(out) || fs::is_empty(out)));

  const std::string file = scratch.path + "/file";
  std::ofstream(file) << "x";
  auto r = run_actorps("export --checkpoint " + ckpts + " --export-dir " + file
                       + " --dataset synthetic");
  check_refused(r, "--export-dir cannot be written: " + file);
  CHECK(contains(r.output, "Not a directory"));
}

TEST_CASE("help documents export and its flags") {
  auto help = run_actorps("export --help");
  CHECK(help.status == 0);
  for (const char* text : {"--checkpoint", "--export-dir", "--dataset", "--synthetic-test-rows",
                           "--seed", "--data-dir"})
    CHECK_MESSAGE(contains(help.output, text), text);
  CHECK(contains(run_actorps("--help").output, "  export "));
}

} // namespace actorps
