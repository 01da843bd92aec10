// What the file-reading benchmarks share: a scratch directory for the files they generate, and
// the machine's load to print beside their figures.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace actorps {

/// A fresh directory named `prefix`_XXXXXX under `parent` (empty: the system's temp
/// directory), removed with its files when the benchmark ends.
struct bench_scratch_dir {
  std::string path;
  bench_scratch_dir(const std::string& parent, const std::string& prefix) {
    const auto base = parent.empty() ? std::filesystem::temp_directory_path()
                                     : std::filesystem::path(parent);
    std::string tmpl = (base / (prefix + "_XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a directory in " + tmpl);
    path = tmpl;
  }
  ~bench_scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  bench_scratch_dir(const bench_scratch_dir&) = delete;
  bench_scratch_dir& operator=(const bench_scratch_dir&) = delete;
};

/// The 1-minute load average: on a busy machine the figures are low and noisy.
inline double load_average() {
  double load = -1;
  return getloadavg(&load, 1) == 1 ? load : -1;
}

} // namespace actorps
