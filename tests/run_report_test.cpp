// What the end of a run tells a person: a run that was never evaluated says so instead of
// reporting an accuracy of 0, and a planned --kill that never fired says so instead of passing
// for a run that survived it.
#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/simulation_fixture.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

std::string line_with(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) return line;
  return "";
}

} // namespace

TEST_CASE("a run without an evaluator reports no evaluation, not an accuracy of 0") {
  using namespace actorps;
  test::scratch_dir tmp;
  auto file = (std::filesystem::path(tmp.path) / "run.jsonl").string();
  auto opts = test::synthetic_run(consistency::sync, 2, 2, 20);
  opts.chief.test = nullptr;  // no test set: the chief starts no evaluator
  opts.chief.metrics = std::make_shared<metrics_file>(file);
  auto result = simulate(std::move(opts));
  REQUIRE(result);
  CHECK(result->evaluations == 0);
  auto summary = line_with(file, "\"event\":\"summary\"");
  REQUIRE(!summary.empty());
  CHECK_MESSAGE(summary.find("\"evaluations\":0") != std::string::npos, summary);
  CHECK_MESSAGE(summary.find("\"final_test_accuracy\":null") != std::string::npos, summary);
}

TEST_CASE("an evaluated run counts its evaluations") {
  using namespace actorps;
  auto opts = test::synthetic_run(consistency::sync, 2, 2, 20);
  opts.chief.eval_every = 10;
  auto result = simulate(std::move(opts));
  REQUIRE(result);
  CHECK(result->evaluations >= 2);  // clock 10 and the final one
  CHECK(result->final_test_accuracy > 0);
}

TEST_CASE("a planned kill past the run's end says it never fired") {
  actorps::test::scratch_dir tmp;
  auto metrics = (std::filesystem::path(tmp.path) / "run.jsonl").string();
  auto r = actorps::test::run_actorps(
    "simulate --dataset synthetic --model 784-32-10 --steps 40 --eval-every 0 "
    "--synthetic-rows 2048 --synthetic-test-rows 512 --no-progress "
    "--kill worker:0@clock=99999 --metrics " + metrics);
  CHECK_MESSAGE(r.status == 0, r.output);
  CHECK_MESSAGE(r.output.find("planned kill worker:0@clock=99999 never fired (the run ended at "
                              "clock 40)") != std::string::npos,
                r.output);
  auto event = line_with(metrics, "\"event\":\"kill_not_fired\"");
  CHECK_MESSAGE(event.find("\"kill\":\"worker:0@clock=99999\"") != std::string::npos, event);
}
