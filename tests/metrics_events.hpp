// Reading back what a run reported in its metrics file (JSONL, one event an object a line), for
// the tests that check a run through its own account of it.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

namespace actorps::test {

/// The events of the metrics file at `path` whose "event" is `kind`, in file order.
inline std::vector<nlohmann::json> metrics_events(const std::string& path,
                                                  const std::string& kind) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto e = nlohmann::json::parse(line);
    if (e["event"] == kind) out.push_back(std::move(e));
  }
  return out;
}

/// The run's "summary" event (null when the file has none).
inline nlohmann::json metrics_summary(const std::string& path) {
  auto all = metrics_events(path, "summary");
  return all.empty() ? nlohmann::json() : all.back();
}

} // namespace actorps::test
