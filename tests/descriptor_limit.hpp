// The soft limit of open descriptors, raised (or set) for a test's span and restored after: a
// flood and the server's side of it are over the usual 1024; a test of running out sets it low.
#pragma once

#include <sys/resource.h>

#include <algorithm>

namespace actorps::test {

struct descriptor_limit {
  rlimit old{};
  /// Raises the soft limit to at least `n` (up to the hard one).
  explicit descriptor_limit(rlim_t n) {
    getrlimit(RLIMIT_NOFILE, &old);
    rlimit raised = old;
    raised.rlim_cur = std::min(std::max(old.rlim_cur, n), old.rlim_max);
    setrlimit(RLIMIT_NOFILE, &raised);
  }
  /// Sets the soft limit to `n` exactly (restored with the rest).
  void set_soft(rlim_t n) {
    rlimit l = old;
    l.rlim_cur = n;
    setrlimit(RLIMIT_NOFILE, &l);
  }
  ~descriptor_limit() { setrlimit(RLIMIT_NOFILE, &old); }
  descriptor_limit(const descriptor_limit&) = delete;
  descriptor_limit& operator=(const descriptor_limit&) = delete;
};

} // namespace actorps::test
