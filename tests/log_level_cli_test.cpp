// --log-level on the commands that run tasks: a bad value is refused naming the flag, and a
// level leaves out the lines after it (the progress line and the summary are not log lines).
#include "tests/command_runner.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

using actorps::test::run_actorps;

// A kill makes the chief log INFO lines (the kill, the loss, the recovery).
const std::string run = "simulate --dataset synthetic --model 784-32-10 --steps 40 --eval-every 0 "
                        "--synthetic-rows 2048 --synthetic-test-rows 512 --no-progress "
                        "--kill worker:1@clock=10";

} // namespace

TEST_CASE("--log-level refuses what is not a level, on every command that runs tasks") {
  for (const char* command : {"simulate --dataset synthetic", "chief", "ps", "worker", "evaluator"}) {
    CAPTURE(command);
    auto r = run_actorps(std::string(command) + " --log-level loud");
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.output.find("--log-level") != std::string::npos, r.output);
  }
}

TEST_CASE("--log-level warn leaves out the INFO lines, info (the default) keeps them") {
  auto info = run_actorps(run);
  CHECK_MESSAGE(info.status == 0, info.output);
  CHECK_MESSAGE(info.output.find("Z INFO chief: fault injection: killing worker:1") != std::string::npos,
                info.output);
  auto warn = run_actorps(run + " --log-level warn");
  CHECK_MESSAGE(warn.status == 0, warn.output);
  CHECK_MESSAGE(warn.output.find(" INFO ") == std::string::npos, warn.output);
  CHECK(warn.output.find("summary:") != std::string::npos);
}
