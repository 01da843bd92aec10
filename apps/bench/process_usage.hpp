// What a benchmark's processes used over its timed round trips: CPU time on every thread and
// minor page faults, of this process and of another one (a shard process, an echo child) read
// from /proc.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <dirent.h>
#include <sys/resource.h>
#include <time.h>

namespace actorps {

/// This thread's CPU time, s: on a machine shared with other work the wall clock also counts
/// the time the thread waited for a core, the CPU time does not.
inline double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

inline int64_t minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

/// What a process has used so far: CPU time on every thread, and minor page faults.
struct process_usage {
  double cpu_ms = 0;
  int64_t minor_faults = 0;
};

inline process_usage own_usage() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return {double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6, minor_faults()};
}

/// Another process's usage, from /proc: the nanoseconds each of its threads has run
/// (task/*/schedstat, first field; a thread that ended since is missed) and its minor faults
/// (stat, the 10th field).
inline process_usage usage_of(int pid) {
  process_usage u;
  auto dir = "/proc/" + std::to_string(pid);
  if (DIR* tasks = opendir((dir + "/task").c_str())) {
    while (dirent* e = readdir(tasks)) {
      if (e->d_name[0] == '.') continue;
      if (FILE* f = std::fopen((dir + "/task/" + e->d_name + "/schedstat").c_str(), "r")) {
        unsigned long long ns = 0;
        if (std::fscanf(f, "%llu", &ns) == 1) u.cpu_ms += double(ns) * 1e-6;
        std::fclose(f);
      }
    }
    closedir(tasks);
  }
  if (FILE* f = std::fopen((dir + "/stat").c_str(), "r")) {
    char line[1024] = {};
    if (std::fgets(line, sizeof line, f))
      if (const char* p = std::strrchr(line, ')')) {  // the name may hold spaces
        long long minflt = 0;
        if (std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %lld", &minflt) == 1)
          u.minor_faults = minflt;
      }
    std::fclose(f);
  }
  return u;
}

} // namespace actorps
