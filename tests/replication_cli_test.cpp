// `actorps simulate --replicas 1` from the command line, on a model with sparse tables (DLRM on
// a generated Criteo set, Adam): primaries killed three times in sync mode, and the exported
// model is the same file, byte for byte, as the one the run without kills exports.
#include "actors/serving/file_bytes.hpp"

#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <string>

namespace actorps {

TEST_CASE("simulate --replicas 1: a sparse model's export is byte-identical with shard kills") {
  test::scratch_dir dir("actorps_replicas_cli");
  const auto gen = test::run_actorps("gen-data criteo --out " + dir.path
                                     + " --rows 6000 --test-rows 500 --seed 3");
  REQUIRE_MESSAGE(gen.status == 0, gen.output);
  const std::string run = "simulate --no-progress --model dlrm --dataset criteo:" + dir.path
                          + "/train.tsv --test " + dir.path + "/test.tsv --epochs 4 --batch 128"
                          + " --optimizer adam --lr 0.002 --admit-after 1 --mode sync --workers 3"
                          + " --ps 2";
  const auto clean = test::run_actorps(run + " --export-dir " + dir.path + "/clean");
  REQUIRE_MESSAGE(clean.status == 0, clean.output);
  const auto metrics = dir.path + "/killed.jsonl";
  const auto killed = test::run_actorps(
    run + " --replicas 1 --kill ps:0@clock=10,ps:1@clock=25,ps:0@clock=40 --export-dir "
    + dir.path + "/killed --metrics " + metrics);
  REQUIRE_MESSAGE(killed.status == 0, killed.output);
  CHECK(killed.output.find("fail-overs to a standby 3, standbys rebuilt 3") != std::string::npos);

  const auto a = read_file_bytes(dir.path + "/clean/1/model.capnp");
  const auto b = read_file_bytes(dir.path + "/killed/1/model.capnp");
  CHECK(a.size() > 1000000);  // the tables' rows are in it
  CHECK(a == b);
  CHECK(test::metrics_events(metrics, "failover").size() == 3);
  CHECK(test::metrics_events(metrics, "rereplicated").size() == 3);
  for (const auto& e : test::metrics_events(metrics, "recovery")) CHECK(e["lost_clocks"] == 0);
  auto summary = test::metrics_summary(metrics);
  CHECK(summary["failovers"] == 3);
}

} // namespace actorps
