#include "actors/chief/cluster_view.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace actorps {

namespace {

/// The jobs whose addresses every task relies on. The evaluator is left out: nobody dials it,
/// and TFJob gives it a cluster without itself while the other replicas list it.
const std::vector<std::string>& job_order() {
  static const std::vector<std::string> order{"chief", "ps", "worker"};
  return order;
}

/// Job type → its addresses, from the canonical text (anything malformed reads as a job of its
/// own name, so that it shows up as a difference rather than vanishing).
std::map<std::string, std::vector<std::string>> parse_view(const std::string& text) {
  std::map<std::string, std::vector<std::string>> jobs;
  std::stringstream items(text);
  for (std::string job; std::getline(items, job, ';');) {
    auto eq = job.find('=');
    auto& addresses = jobs[job.substr(0, eq)];
    if (eq == std::string::npos) continue;
    std::stringstream list(job.substr(eq + 1));
    for (std::string a; std::getline(list, a, ',');) addresses.push_back(a);
  }
  return jobs;
}

std::string listed(const std::vector<std::string>& addresses) {
  std::string out = std::to_string(addresses.size()) + " (";
  for (std::size_t i = 0; i < addresses.size(); ++i) out += (i ? ", " : "") + addresses[i];
  return out + ")";
}

} // namespace

std::string cluster_view_text(const std::map<std::string, std::vector<host_port>>& jobs) {
  std::string out;
  auto add = [&](const std::string& type, const std::vector<host_port>& tasks) {
    if (tasks.empty()) return;
    out += (out.empty() ? "" : ";") + type + "=";
    for (std::size_t i = 0; i < tasks.size(); ++i) out += (i ? "," : "") + tasks[i].text();
  };
  for (const auto& type : job_order())
    if (auto it = jobs.find(type); it != jobs.end()) add(type, it->second);
  return out;
}

std::string cluster_view_difference(const std::string& task_view, const std::string& chief_view) {
  if (task_view == chief_view) return "";
  auto task = parse_view(task_view), chief = parse_view(chief_view);
  std::vector<std::string> types = job_order();
  for (const auto& view : {task, chief})
    for (const auto& [type, _] : view)
      if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
  for (const auto& type : types) {
    const auto& mine = task[type];
    const auto& theirs = chief[type];
    if (mine.size() != theirs.size())
      return type + ": this task's cluster lists " + listed(mine) + ", the chief's "
             + listed(theirs);
    for (std::size_t i = 0; i < mine.size(); ++i)
      if (mine[i] != theirs[i])
        return type + ":" + std::to_string(i) + " is " + mine[i] + " in this task's cluster, "
               + theirs[i] + " in the chief's";
  }
  return "the cluster text differs ('" + task_view + "' against '" + chief_view + "')";
}

std::string cluster_view_difference_growing(const std::string& task_view,
                                            const std::string& chief_view) {
  auto task = parse_view(task_view);
  const auto chief = parse_view(chief_view);
  for (const char* job : {"ps", "worker"}) {  // what the chief does not list yet is not compared
    auto& tasks = task[job];
    auto chief_tasks = chief.find(job);
    const std::size_t listed = chief_tasks == chief.end() ? 0 : chief_tasks->second.size();
    if (tasks.size() > listed) tasks.resize(listed);
  }
  auto canonical = [](const std::map<std::string, std::vector<std::string>>& jobs) {
    std::string out;
    for (const auto& [type, addresses] : jobs) {
      if (addresses.empty()) continue;
      out += (out.empty() ? "" : ";") + type + "=";
      for (std::size_t i = 0; i < addresses.size(); ++i) out += (i ? "," : "") + addresses[i];
    }
    return out;
  };
  if (canonical(task) == canonical(chief)) return "";
  return cluster_view_difference(canonical(task), canonical(chief));
}

std::string cluster_view_address(const std::string& view, const std::string& job, int32_t index) {
  auto jobs = parse_view(view);
  auto it = jobs.find(job);
  if (it == jobs.end() || index < 0 || static_cast<std::size_t>(index) >= it->second.size())
    return "";
  return it->second[static_cast<std::size_t>(index)];
}

spare_seat seat_for_spare(const std::string& task_view, const std::string& chief_view,
                          const std::string& job, int32_t index) {
  if (!chief_view.empty())
    if (auto difference = cluster_view_difference_growing(task_view, chief_view);
        !difference.empty())
      return {{}, "its cluster spec is not the chief's with more ps or worker tasks: "
                    + difference};
  try {
    return {parse_address(cluster_view_address(task_view, job, index), "its address"), ""};
  } catch (const std::exception& e) {
    return {{}, std::string("its cluster spec does not list it: ") + e.what()};
  }
}

} // namespace actorps
