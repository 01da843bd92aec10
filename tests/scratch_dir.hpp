// A fresh directory under the system temp directory for one test, removed with its contents
// when the test ends; and what a directory holds, for tests that compare before and after.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace actorps::test {

struct scratch_dir {
  std::string path;
  explicit scratch_dir(const std::string& prefix = "actorps_test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + tmpl);
    path = tmpl;
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
};

/// The names in `dir`.
inline std::set<std::string> dir_entries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.insert(e.path().filename().string());
  return names;
}

/// The bytes of every file in `dir`, by name.
inline std::map<std::string, std::string> dir_contents(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& name : dir_entries(dir)) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    files[name].assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return files;
}

} // namespace actorps::test
