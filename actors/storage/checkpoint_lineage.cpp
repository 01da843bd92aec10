#include "actors/storage/checkpoint_lineage.hpp"
#include "actors/protocol/input_file.hpp"
#include "actors/storage/checkpoint_store.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <functional>
#include <fstream>
#include <random>

namespace fs = std::filesystem;

namespace actorps {

std::string new_run_id() {
  std::random_device device;
  std::mt19937_64 gen((uint64_t(device()) << 32) ^ device() ^ uint64_t(std::time(nullptr)));
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(gen()));
  return buf;
}

void write_run_id(const fs::path& dir, const std::string& run_id) {
  auto text = run_id + "\n";
  write_file_durably(dir / run_id_file_name, text.data(), text.size());
}

std::string run_id_of(const fs::path& dir) {
  // read only from regular files of sane sizes: anything else in the directory names no run
  std::string text;
  if (read_input_file((dir / run_id_file_name).string(), 4096, text).empty()) {
    auto id = text.substr(0, text.find('\n'));
    if (!id.empty()) return id;
  }
  if (!read_input_file((dir / manifest_name).string(), max_manifest_bytes, text).empty()) return "";
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_object() && json.contains("run_id") && json["run_id"].is_string())
    return json["run_id"].get<std::string>();
  return "";
}

std::vector<fs::path> other_runs_checkpoints(const fs::path& root, const std::string& run_id) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    auto name = entry.path().filename().string();
    auto clock = checkpoint_clock_of(name);
    if (!clock || name != checkpoint_dir_name(*clock) || !entry.is_directory()) continue;
    // without a manifest it is no checkpoint (a crash while writing): nothing to confuse
    if (!fs::exists(entry.path() / manifest_name)) continue;
    if (run_id_of(entry.path()) != run_id) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end(), std::greater<>());
  return out;
}

fs::path move_aside(const fs::path& root, const std::vector<fs::path>& dirs) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "superseded-%Y%m%dT%H%M%SZ", &tm);
  auto aside = root / stamp;
  for (int n = 2; fs::exists(aside); ++n) aside = root / (stamp + ("-" + std::to_string(n)));
  std::error_code ec;
  fs::create_directory(aside, ec);
  if (ec) throw checkpoint_error(aside.string() + ": cannot be created (" + ec.message() + ")");
  for (const auto& dir : dirs) {
    fs::rename(dir, aside / dir.filename(), ec);
    if (ec)
      throw checkpoint_error(dir.string() + ": cannot be moved to " + aside.string() + " ("
                             + ec.message() + ")");
  }
  return aside;
}

} // namespace actorps
