// The metrics JSONL is written in whole lines: each event reaches the file as one complete
// line the moment it is written, so a run killed at any point leaves no torn last line.
#include "actors/chief/metrics.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <iterator>
#include <sys/wait.h>
#include <unistd.h>

using namespace actorps;

namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

json_object train_event(int clock) {
  return json_object().add("event", "train").add("clock", clock).add("loss", 0.125)
    .add("note", std::string(50, 'n'));
}

} // namespace

TEST_CASE("a metrics event is in the file, as a whole line, as soon as it is written") {
  actorps::test::scratch_dir dir("actorps_metrics_lines");
  auto path = dir.path + "/run.jsonl";
  metrics_file metrics(path);
  metrics.write(train_event(1));
  CHECK(bytes_of(path) == train_event(1).str() + "\n");  // not held in a buffer
  metrics.write(train_event(2));
  CHECK(bytes_of(path) == train_event(1).str() + "\n" + train_event(2).str() + "\n");
}

TEST_CASE("a writer killed between events leaves only whole lines") {
  actorps::test::scratch_dir dir("actorps_metrics_killed");
  auto path = dir.path + "/run.jsonl";
  constexpr int events = 1000;  // ~100 kB: a buffered writer would have flushed a torn block
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // the run: writes, then dies without closing or flushing anything
    metrics_file metrics(path);
    for (int clock = 0; clock < events; ++clock) metrics.write(train_event(clock));
    raise(SIGKILL);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  std::string expected;
  for (int clock = 0; clock < events; ++clock) expected += train_event(clock).str() + "\n";
  auto written = bytes_of(path);
  CHECK(written.size() == expected.size());
  CHECK(written == expected);
}
