// The --metrics JSONL contract at its source (actors/chief/metrics.hpp): one object per line,
// keys in the order they were added, each value with its JSON type, non-finite numbers as null,
// text escaped, and bytes that are not UTF-8 replaced instead of ending the writer.
#include "actors/chief/metrics.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <vector>

using namespace actorps;

namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

} // namespace

TEST_CASE("metrics_file writes one object per line, in key order, non-finite numbers as null") {
  actorps::test::scratch_dir dir("actorps_metrics");
  auto path = dir.path + "/run.jsonl";
  {
    metrics_file file(path);
    file.write(json_object()
                 .add("event", "eval")
                 .add("clock", int64_t{40})
                 .add("epoch", 2.5)
                 .add("loss", std::nan(""))
                 .add("rate", std::numeric_limits<double>::infinity())
                 .add("dropped", std::numeric_limits<uint64_t>::max())
                 .add("final", true));
    file.write(nlohmann::ordered_json{{"event", "failure"},
                                      {"why", "a \"quoted\" path\\with\ttab\nand \x01"},
                                      {"dir", std::string("bad \xff byte")}});
    file.flush();
  }
  auto lines = lines_of(path);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == R"({"event":"eval","clock":40,"epoch":2.5,"loss":null,"rate":null,)"
                    R"("dropped":18446744073709551615,"final":true})");
  CHECK(lines[1] == R"({"event":"failure","why":"a \"quoted\" path\\with\ttab\nand \u0001",)"
                    "\"dir\":\"bad \xef\xbf\xbd byte\"}");
  // Both read back as what was written.
  auto eval = nlohmann::json::parse(lines[0]);
  CHECK(eval["clock"].is_number_integer());
  CHECK(eval["epoch"].get<double>() == 2.5);
  CHECK(eval["loss"].is_null());
  CHECK(eval["final"].get<bool>());
  CHECK(nlohmann::json::parse(lines[1])["why"] == "a \"quoted\" path\\with\ttab\nand \x01");
}

TEST_CASE("a metrics_file without a path writes nothing, and one that cannot be opened says so") {
  metrics_file none("");
  none.write(json_object().add("event", "train"));  // no file, no effect
  CHECK_THROWS_WITH_AS(metrics_file("/nonexistent/dir/run.jsonl"),
                       "cannot open metrics file /nonexistent/dir/run.jsonl for writing",
                       std::runtime_error);
}
