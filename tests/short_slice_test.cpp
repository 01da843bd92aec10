// The short time slice the data link's waking threads ask for (short_slice.hpp), read back from
// the kernel's own account of the thread (/proc/thread-self/sched).
#include "actors/link/short_slice.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

namespace {

/// The calling thread's slice in ns as the kernel reports it; nullopt where it does not.
std::optional<long long> slice_of_this_thread() {
  std::ifstream in("/proc/thread-self/sched");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("se.slice", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) return std::nullopt;
    std::istringstream value(line.substr(colon + 1));
    double ns = 0;
    if (value >> ns) return static_cast<long long>(ns);
  }
  return std::nullopt;
}

} // namespace

TEST_CASE("short slice: a thread that asks gets the 100 us slice from the kernel, another thread keeps its own") {
  std::optional<long long> asked, other;
  bool granted = false;
  std::thread t([&] {
    granted = actorps::request_short_slice();
    asked = slice_of_this_thread();
  });
  t.join();
  std::thread u([&] { other = slice_of_this_thread(); });
  u.join();
  if (!granted || !asked || !other) {
    MESSAGE("SKIPPED: this kernel has no custom EEVDF slice (Linux < 6.12) or does not report it");
    return;
  }
  CHECK(*asked == 100000);
  CHECK(*other != 100000);
}
