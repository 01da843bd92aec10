// rate_limited_log: the first lines of a kind pass, the rest are counted, and the count is
// written once the window is over.
#include "actors/protocol/rate_limited_log.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace actorps;
using namespace std::chrono_literals;

TEST_CASE("rate_limited_log passes a burst per kind and window, then says how many it held back") {
  std::vector<std::string> out;
  rate_limited_log log{[&](const std::string& l) { out.push_back(l); }, 10s, 2};
  auto t0 = rate_limited_log::clock::now();
  for (int i = 0; i < 5; ++i) log.write("refused", "refused " + std::to_string(i), t0 + 1s * i);
  log.write("other", "other 0", t0);
  REQUIRE(out.size() == 3);
  CHECK(out[0] == "refused 0");
  CHECK(out[1] == "refused 1");
  CHECK(out[2] == "other 0");
  CHECK(log.suppressed() == 3);
  REQUIRE(log.next_flush());
  CHECK(*log.next_flush() == t0 + 10s);
  // The next line after the window carries the count.
  log.write("refused", "refused 5", t0 + 11s);
  REQUIRE(out.size() == 4);
  CHECK(out[3] == "refused 5 (and 3 more like it in the last 10 s)");
  // A kind that falls silent has its count written by flush().
  for (int i = 0; i < 4; ++i) log.write("quiet", "quiet", t0 + 12s);
  log.flush(t0 + 21s);
  CHECK(out.size() == 6);
  log.flush(t0 + 22s);
  REQUIRE(out.size() == 7);
  CHECK(out[6] == "quiet (and 2 more like it in the last 10 s)");
  CHECK(rate_limited_log::more_like_it(2317, 10s) == " (and 2 317 more like it in the last 10 s)");
  CHECK(rate_limited_log::more_like_it(1234567, 10s) == " (and 1 234 567 more like it in the last 10 s)");
}

TEST_CASE("rate_limited wraps a refusal handler: 5 of 7 calls in a window reach it") {
  int calls = 0;
  auto handler = rate_limited([&](const std::string& peer, const std::string& why) {
    ++calls;
    CHECK(peer == "10.0.0.1:5");
    CHECK(why == "garbage");
  });
  for (int i = 0; i < 7; ++i) handler("10.0.0.1:5", "garbage");
  CHECK(calls == 5);
}

TEST_CASE("rate_limited limits each reason apart: a flood of one does not hide another") {
  std::vector<std::string> passed;
  auto handler = rate_limited(
    [&](const std::string&, const std::string& why) { passed.push_back(why); });
  for (int i = 0; i < 7; ++i) handler("10.0.0.1:5", "not a CAF peer (bytes " + std::to_string(i) + ")");
  handler("10.0.0.1:6", "it does not read its replies: closed (17 messages)");
  REQUIRE(passed.size() == 6);
  CHECK(passed.back() == "it does not read its replies: closed (17 messages)");
}
