// What the fuzz targets share: the selector byte that picks a sub-decoder, an input cut into
// parts, and scratch files for the decoders that read paths rather than bytes.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace actorps::fuzz {

/// The input after its first byte, which selects what decodes it (selector % choices).
struct selected {
  unsigned choice = 0;
  const uint8_t* data = nullptr;
  std::size_t size = 0;
  std::string_view text() const { return {reinterpret_cast<const char*>(data), size}; }
};

inline bool select(const uint8_t* data, std::size_t size, unsigned choices, selected& out) {
  if (size == 0) return false;
  out = {data[0] % choices, data + 1, size - 1};
  return true;
}

/// Parts of `text` cut at each `separator` (a seed corpus joins files with it; the fuzzer's
/// dictionary knows it too).
inline std::vector<std::string> split(std::string_view text, std::string_view separator) {
  std::vector<std::string> parts;
  for (;;) {
    auto at = text.find(separator);
    parts.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + separator.size());
  }
}

/// The separator between files of one input (checkpoint directories).
inline constexpr std::string_view file_separator = "\n=====actorps-fuzz-file=====\n";

/// A directory of this process's own for scratch files (in memory where /dev/shm exists),
/// removed at exit. libFuzzer ends some runs with _exit (a finding, -fork's jobs), which skips
/// that, so each new one also removes those of processes that no longer exist.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm"
                                                                     : std::filesystem::temp_directory_path();
    const std::string prefix = "actorps-fuzz-";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
      auto name = entry.path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      auto pid = std::atoi(name.c_str() + prefix.size());
      if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH)
        std::filesystem::remove_all(entry.path(), ec);
    }
    auto d = base / (prefix + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return dir;
}

/// Writes `bytes` to `path`, replacing it.
inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A scratch file named `name` holding `bytes`; its path.
inline std::string scratch_file(const std::string& name, std::string_view bytes) {
  auto path = scratch_dir() / name;
  write_file(path, bytes);
  return path.string();
}

} // namespace actorps::fuzz
