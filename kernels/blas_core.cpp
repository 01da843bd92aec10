#include "kernels/blas_core.hpp"

#include <cblas.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace actorps {

namespace {

/// Set (to the core OpenBLAS chose) in the program run again, so that a second fallback, which
/// would mean the variable did not take, never runs it a third time.
constexpr const char* rerun_marker = "ACTORPS_BLAS_CORE_FALLBACK";

} // namespace

cpu_vector_units this_cpu_vector_units() {
  cpu_vector_units u;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  // GCC's checks read XCR0 as well as CPUID: a unit the OS does not save counts as absent.
  u.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  u.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
             && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
  return u;
}

std::string better_blas_core(std::string_view chosen, cpu_vector_units units) {
  if (chosen != "Prescott") return {};
  if (units.avx512) return "SkylakeX";
  if (units.avx2_fma) return "Haswell";
  return {};  // a CPU that old may be one: SSE3 is what it has
}

std::string blas_core_in_use() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string blas_core_missed() {
  return better_blas_core(blas_core_in_use(), this_cpu_vector_units());
}

void rerun_with_better_blas_core(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv(rerun_marker)) return;
  auto better = blas_core_missed();
  if (better.empty()) return;
  auto chosen = blas_core_in_use();
  if (::setenv("OPENBLAS_CORETYPE", better.c_str(), 1) != 0
      || ::setenv(rerun_marker, chosen.c_str(), 1) != 0)
    return;
  // The binary's own path, not /proc/self/exe: the process keeps its name (ps, top, perf).
  char path[4096];
  auto n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n > 0) {
    path[n] = '\0';
    ::execv(path, argv);
  }
  std::fprintf(stderr, "actorps: OpenBLAS chose its %s kernels for this CPU and running again "
                       "with OPENBLAS_CORETYPE=%s failed (%s); the GEMMs run slower\n",
               chosen.c_str(), better.c_str(), std::strerror(errno));
  ::unsetenv("OPENBLAS_CORETYPE");
  ::unsetenv(rerun_marker);
}

} // namespace actorps
