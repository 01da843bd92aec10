#include "actors/deploy/cluster_spec.hpp"
#include "actors/protocol/input_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <set>

namespace actorps {

const std::vector<host_port>& cluster_spec::tasks(const std::string& type) const {
  static const std::vector<host_port> none;
  auto i = jobs.find(type);
  return i == jobs.end() ? none : i->second;
}

const host_port& cluster_spec::address(const task_id& task) const {
  if (std::find(task_types().begin(), task_types().end(), task.type) == task_types().end())
    throw cluster_error("unknown task type '" + task.type + "' (chief, ps, worker or evaluator)");
  const auto& list = tasks(task.type);
  if (task.index < 0 || task.index >= static_cast<int>(list.size()))
    throw cluster_error("task " + task.text() + " is outside the cluster: it has "
                        + std::to_string(list.size()) + " " + task.type + " task(s)");
  return list[task.index];
}

std::optional<host_port> cluster_spec::own_address(const task_id& task) const {
  if (task.type == "evaluator" && task.index == 0 && count("evaluator") == 0) return std::nullopt;
  return address(task);
}

void cluster_spec::validate(const std::string& source, loop_owner owner) const {
  for (const auto& [type, list] : jobs)
    if (std::find(task_types().begin(), task_types().end(), type) == task_types().end())
      throw cluster_error(source + ": unknown job type '" + type
                          + "' (chief, ps, worker or evaluator)");
  if (owner == loop_owner::runtime) {
    if (count("chief") != 1) throw cluster_error(source + ": the cluster needs exactly one chief");
    if (count("evaluator") > 1) throw cluster_error(source + ": at most one evaluator is supported");
  } else if (count("chief") + count("evaluator") > 0) {
    throw cluster_error(source + ": a loop of your own has ps and worker tasks only (no chief "
                                 "or evaluator)");
  }
  if (count("ps") < 1) throw cluster_error(source + ": the cluster needs at least one ps task");
  if (count("worker") < 1) throw cluster_error(source + ": the cluster needs at least one worker");
  std::map<std::string, std::string> seen;
  for (const auto& [type, list] : jobs)
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto name = type + ":" + std::to_string(i);
      auto [it, fresh] = seen.emplace(list[i].text(), name);
      if (!fresh)
        throw cluster_error(source + ": address " + list[i].text() + " is used by both "
                            + it->second + " and " + name);
    }
}

namespace {

/// TF_CONFIG's "task", when it has one; "environment" and any other key are ignored.
std::optional<task_id> task_of_doc(const nlohmann::json& doc, const std::string& source) {
  if (!doc.contains("task")) return std::nullopt;
  const auto& t = doc["task"];
  if (!t.is_object() || !t.contains("type") || !t["type"].is_string() || !t.contains("index")
      || !t["index"].is_number_integer())
    throw cluster_error(source + ": \"task\" must be {\"type\": string, \"index\": integer}");
  return task_id{canonical_task_type(t["type"].get<std::string>()), t["index"].get<int>()};
}

} // namespace

tf_config parse_tf_config(const std::string& text, const std::string& source, loop_owner owner) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range: 1e400
    throw cluster_error(source + ": malformed JSON: " + e.what());
  }
  if (!doc.is_object() || !doc.contains("cluster") || !doc["cluster"].is_object())
    throw cluster_error(source + ": expected an object with a \"cluster\" object");
  tf_config cfg;
  std::map<std::string, std::string> named;  // canonical type -> as the spec wrote it
  for (const auto& [type, list] : doc["cluster"].items()) {
    if (!list.is_array()) throw cluster_error(source + ": cluster." + type + " must be a list");
    auto canonical = canonical_task_type(type);
    if (auto [it, fresh] = named.emplace(canonical, type); !fresh)
      throw cluster_error(source + ": cluster." + it->second + " and cluster." + type
                          + " are the same job (" + canonical + "): give one");
    auto& out = cfg.cluster.jobs[canonical];
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto where = source + ": cluster." + type + "[" + std::to_string(i) + "]";
      if (!list[i].is_string()) throw cluster_error(where + " must be a \"host:port\" string");
      out.push_back(parse_address(list[i].get<std::string>(), where));
    }
  }
  cfg.cluster.validate(source, owner);
  cfg.task = task_of_doc(doc, source);
  if (cfg.task) {
    try {
      if (owner == loop_owner::user)
        cfg.cluster.address(*cfg.task);
      else
        cfg.cluster.own_address(*cfg.task);
    } catch (const cluster_error& e) {
      throw cluster_error(source + ": " + e.what());
    }
  }
  return cfg;
}

std::optional<task_id> parse_tf_config_task(const std::string& text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range: 1e400
    throw cluster_error(source + ": malformed JSON: " + e.what());
  }
  if (!doc.is_object()) throw cluster_error(source + ": expected a JSON object");
  return task_of_doc(doc, source);
}

tf_config read_tf_config_file(const std::string& path) {
  // A FIFO would block the task and /dev/zero never ends: a regular file only, and one of a
  // size a cluster spec has (a thousand tasks take some 30 KiB).
  std::string text;
  if (auto why = read_input_file(path, max_cluster_file_bytes, text); !why.empty())
    throw cluster_error("--cluster " + why);
  return parse_tf_config(text, path);
}

task_id parse_task(const std::string& text) {
  auto colon = text.find(':');
  auto index = colon == std::string::npos ? std::string{} : text.substr(colon + 1);
  if (colon == std::string::npos || colon == 0 || index.empty() || index.size() > 6
      || !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw cluster_error("--task expects TYPE:INDEX, e.g. worker:0 (got '" + text + "')");
  return {canonical_task_type(text.substr(0, colon)), std::stoi(index)};
}

std::string canonical_task_type(const std::string& type) {
  std::string lower = type;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower == "master" ? "chief" : lower;
}

} // namespace actorps
