#include "actors/link/short_slice.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace actorps {

namespace {

// The kernel's struct sched_attr (include/uapi/linux/sched/types.h), first version: glibc 2.36
// does not declare it, nor a wrapper for the call.
struct sched_attr_v0 {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
};

} // namespace

bool request_short_slice() {
#ifdef SYS_sched_setattr
  errno = 0;
  int nice = ::getpriority(PRIO_PROCESS, 0);  // this thread's (Linux: per thread)
  if (nice == -1 && errno != 0) nice = 0;
  sched_attr_v0 attr{};
  attr.size = sizeof attr;
  attr.sched_policy = SCHED_OTHER;
  attr.sched_nice = nice;
  attr.sched_runtime = static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(short_slice).count());
  return ::syscall(SYS_sched_setattr, 0, &attr, 0u) == 0;
#else
  return false;
#endif
}

} // namespace actorps
