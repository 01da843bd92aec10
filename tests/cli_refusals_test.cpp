// Command lines that used to run in silence, or run away, and are now refused with exit 2 naming
// the flag: stray arguments, a flag taken as the value of the one before, NaN and absurd
// hyper-parameters, unbounded counts, and a CSV whose labels do not start at 0.
#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using actorps::test::run_actorps;

// Each case also names a short run, so that a regression (the line accepted) fails quickly
// instead of training the default five epochs.
const std::string quick = "--dataset synthetic --model 784-8-10 --steps 2 --synthetic-rows 256 "
                          "--synthetic-test-rows 64 --no-progress ";

struct refused {
  std::string args;
  std::string named;  ///< what the error must name
};

void check_refused(const refused& c) {
  CAPTURE(c.args);
  auto r = run_actorps(c.args);
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find(c.named) != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("summary:") == std::string::npos, r.output);  // nothing trained
}

} // namespace

TEST_CASE("stray arguments and a flag taken as a value are refused, naming them") {
  for (const auto& c : {
         refused{"simulate " + quick + "-- --workers 0", "unexpected argument '--workers'"},
         refused{"simulate foo " + quick, "unexpected argument 'foo'"},
         refused{"simulate " + quick + "--export-dir --steps 3", "--export-dir needs a value"},
         refused{"simulate " + quick + "--metrics --seed 3", "--metrics needs a value"},
         refused{"export --checkpoint --export-dir x", "--checkpoint needs a value"},
         refused{"gen-data criteo --out /tmp/x stray", "unexpected argument 'stray'"},
       })
    check_refused(c);
  // The value is still reachable when it is meant: --flag=--value.
  actorps::test::scratch_dir dir("actorps-cli-refusals");
  auto r = run_actorps("simulate " + quick + "--metrics=" + dir.path + "/--odd.jsonl");
  CHECK_MESSAGE(r.status == 0, r.output);
  CHECK(std::ifstream(dir.path + "/--odd.jsonl").good());
}

TEST_CASE("NaN and absurd hyper-parameters and unbounded counts are refused, naming the flag") {
  for (const auto& c : {
         refused{"simulate " + quick + "--momentum nan", "--momentum"},
         refused{"simulate " + quick + "--momentum 1", "--momentum"},
         refused{"simulate " + quick + "--lr 1e18", "--lr"},
         refused{"simulate " + quick + "--lr nan", "--lr"},
         refused{"simulate " + quick + "--epochs nan", "--epochs"},
         refused{"simulate " + quick + "--request-timeout inf", "--request-timeout"},
         refused{"simulate " + quick + "--threads 1000", "--threads"},
         refused{"simulate " + quick + "--ps 1000000", "--ps"},
         refused{"simulate " + quick + "--workers 5000", "--workers"},
         refused{"simulate " + quick + "--batch 100000000", "--batch"},
       })
    check_refused(c);
}

TEST_CASE("a task's --connect-timeout and --threads are bounded too") {
  actorps::test::scratch_dir dir("actorps-cli-refusals");
  auto cluster = dir.path + "/cluster.json";
  std::ofstream(cluster) << R"({"cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"],
                               "worker": ["127.0.0.1:3"]}})";
  for (const auto& c : {
         refused{"ps --insecure --cluster " + cluster + " --task ps:0 --connect-timeout inf",
                 "--connect-timeout"},
         refused{"worker --insecure --cluster " + cluster + " --task worker:0 --threads 1000", "--threads"},
         refused{"run --insecure --cluster " + cluster + " --task worker:0 --threads 1000", "--threads"},
       })
    check_refused(c);
}

TEST_CASE("a CSV whose labels start above 0 is refused, naming the file and the fix") {
  actorps::test::scratch_dir dir("actorps-cli-refusals");
  const std::string train = dir.path + "/train.csv", test = dir.path + "/test.csv";
  {
    std::ofstream t(train), e(test);
    // The label first, then two features.
    for (int i = 0; i < 64; ++i) t << 1 + i % 3 << "," << i % 7 << "," << (i * 3) % 5 << "\n";
    for (int i = 0; i < 8; ++i) e << 1 + i % 3 << "," << i << "," << i % 2 << "\n";
  }
  auto r = run_actorps("simulate --dataset csv:" + train + " --test " + test
                       + " --model 2-4-4 --steps 2 --no-progress");
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find(train + ": the labels run from 1 to 3") != std::string::npos,
                r.output);
  CHECK_MESSAGE(r.output.find("subtract 1") != std::string::npos, r.output);
}

TEST_CASE("a bad training data line ends the run naming file and line, not replacing workers") {
  // Worker 0's part holds a 3-field line: every worker reading it would stop there, so the
  // chief ends the run (exit 1) with the reader's file:line, rather than replacing the worker
  // until --max-replacements and reporting success without its samples.
  actorps::test::scratch_dir dir("actorps-bad-line");
  const std::string d = dir.path;
  REQUIRE(run_actorps("gen-data criteo --out " + d + " --rows 4000 --test-rows 500").status == 0);
  REQUIRE(std::system(("sed -i '700s/^.*$/1\\tabc\\tdef/' " + d + "/train.tsv").c_str()) == 0);
  auto r = run_actorps("simulate --model lr --dataset criteo:" + d + "/train.tsv --test " + d
                       + "/test.tsv --workers 2 --no-progress");
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.output.find("stopped on its training data: bad_data: " + d
                              + "/train.tsv:700: 3 fields, expected 40") != std::string::npos,
                r.output);
  CHECK_MESSAGE(r.output.find("replacing it") == std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("summary:") == std::string::npos, r.output);
}
