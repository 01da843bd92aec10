// stop_blas_thread_pool: OpenBLAS's pool, started when it loaded, is gone (its threads joined),
// and GEMMs still run, on the calling thread.
#include "kernels/backend.hpp"
#include "kernels/blas_threads.hpp"

#include <doctest/doctest.h>

#include <cblas.h>
#include <dirent.h>

#include <vector>

using namespace actorps;

namespace {

int threads_of_this_process() {
  int n = 0;
  if (DIR* tasks = opendir("/proc/self/task")) {
    while (dirent* e = readdir(tasks))
      if (e->d_name[0] != '.') ++n;
    closedir(tasks);
  }
  return n;
}

} // namespace

TEST_CASE("stopping OpenBLAS's thread pool ends its threads, and a GEMM still runs") {
  // Under CTest each test case is a process of its own: OpenBLAS's pool is what it started at
  // load, one thread fewer than the threads it would use (a 1-core machine: none). Run among
  // other tests, one of them may have set the count already (make_cpu_backend), and the pool's
  // size is not known: then only no thread may be added.
  const int started = openblas_get_num_threads() - 1;
  const int before = threads_of_this_process();
  stop_blas_thread_pool();
  const int after = threads_of_this_process();
  CAPTURE(started);
  CAPTURE(before);
  CAPTURE(after);
  CHECK(openblas_get_num_threads() == 1);
  CHECK(after <= before);
  if (started > 0) CHECK(before - after >= started);
  stop_blas_thread_pool();  // twice: nothing left to stop
  CHECK(threads_of_this_process() == after);

  // [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50], on this thread; no pool comes back for it, nor
  // for a CPU backend made afterwards (which asks for one BLAS thread itself: OpenBLAS 0.3.21
  // restarted the stopped pool when asked so again).
  std::vector<float> a{1, 2, 3, 4}, b{5, 6, 7, 8}, c(4, 0.0f);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f, a.data(), 2, b.data(), 2,
              0.0f, c.data(), 2);
  CHECK(c == std::vector<float>{19, 22, 43, 50});
  auto be = make_cpu_backend();
  REQUIRE(be->computes_in_host_memory());  // its gemm reads and writes these vectors
  std::vector<float> via_backend(4, 0.0f);
  be->gemm(false, false, 2, 2, 2, 1.0f, a.data(), 2, b.data(), 2, 0.0f, via_backend.data(), 2);
  CHECK(via_backend == std::vector<float>{19, 22, 43, 50});
  CHECK(openblas_get_num_threads() == 1);
  CHECK(threads_of_this_process() == after);
}
