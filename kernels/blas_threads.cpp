#include "kernels/blas_threads.hpp"

#include <cblas.h>
#include <dlfcn.h>

namespace actorps {

void stop_blas_thread_pool() {
  openblas_set_num_threads(1);
  // OpenBLAS's own fork handler, which joins the pool; not in cblas.h, so looked up: a BLAS
  // without it still links, and loses nothing.
  using shutdown_fn = int (*)();
  if (auto shutdown = reinterpret_cast<shutdown_fn>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_")))
    shutdown();
}

} // namespace actorps
