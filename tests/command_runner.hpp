// Running a command line, for the tests that drive the actorps binary: its exit status and its
// output (stdout and stderr together). No doctest here, so a stand-alone check program can
// use it too.
#pragma once

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <sys/wait.h>

namespace actorps::test {

struct command_result {
  int status = -1;     ///< exit status; -1 when killed by a signal
  std::string output;  ///< stdout and stderr together
};

/// Runs `command` with sh, bounded by timeout(1) so that a hang fails instead of stalling.
inline command_result run_command(const std::string& command, int timeout_s = 120) {
  const std::string cmd = "timeout " + std::to_string(timeout_s) + " " + command + " 2>&1";
  command_result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed for: " + cmd);
  std::array<char, 4096> buf;
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;)
    r.output.append(buf.data(), n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

/// Whether a command's output (or any text) holds `part`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Runs the actorps binary of this build with `args`.
inline command_result run_actorps(const std::string& args) {
  return run_command(std::string(ACTORPS_BINARY) + " " + args);
}

} // namespace actorps::test
