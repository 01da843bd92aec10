#include "actors/guard/await_name.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <thread>

namespace actorps {

std::string resolve_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (found) freeaddrinfo(found);
  return rc == 0 ? "" : gai_strerror(rc);
}

std::string await_name(const std::string& host, std::chrono::milliseconds timeout,
                       const std::function<void(const std::string& why)>& on_wait,
                       const name_lookup& lookup) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline = start + timeout;
  auto backoff = std::chrono::milliseconds(50);
  int attempts = 0;
  for (;;) {
    auto why = lookup(host);
    ++attempts;
    if (why.empty()) return "";
    if (attempts == 1 && on_wait) on_wait(why);
    auto now = clock::now();
    if (now >= deadline) {
      auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
      return "host name '" + host + "' did not resolve (" + why + ") in " + std::to_string(attempts)
             + " attempts over " + std::to_string(waited) + " ms";
    }
    // The retry policy, not a wait for an event: nothing announces that a DNS record has
    // appeared, so the lookup is tried again after an exponential backoff, never past the deadline.
    std::this_thread::sleep_for(std::min<clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

} // namespace actorps
