// refusal_log: a storm of refused connections costs at most `burst` lines per window, and the
// count of the rest is logged with the first refusal of a later window.
#include "actors/net/refusal_log.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace actorps;

TEST_CASE("refusal_log logs a burst per window and counts the rest") {
  std::vector<std::string> lines;
  auto now = refusal_log::clock::time_point{} + std::chrono::hours(1);
  refusal_log log{"ps:0", 3, std::chrono::seconds(10),
                  [&](log_level level, const std::string& who, const std::string& text) {
                    lines.push_back(std::string(to_string(level)) + " " + who + ": " + text);
                  },
                  [&] { return now; }};
  for (int i = 0; i < 1000; ++i) log.refused("10.0.0.7:" + std::to_string(40000 + i), "garbage");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "info ps:0: refused a connection from 10.0.0.7:40000: garbage");
  CHECK(lines[2] == "info ps:0: refused a connection from 10.0.0.7:40002: garbage");
  now += std::chrono::seconds(9);  // the same window
  log.refused("10.0.0.8:1", "garbage");
  CHECK(lines.size() == 3);
  now += std::chrono::seconds(2);  // the next one: the count, then the refusal itself
  log.refused("10.0.0.9:2", "why");
  REQUIRE(lines.size() == 5);
  CHECK(lines[3] == "warn ps:0: refused 998 more connection(s) not logged one by one (at most 3 "
                    "lines per 10 s)");
  CHECK(lines[4] == "info ps:0: refused a connection from 10.0.0.9:2: why");
  now += std::chrono::seconds(60);  // a quiet window after a full one: no count to give
  log.refused("10.0.0.9:3", "why");
  CHECK(lines.size() == 6);
}
