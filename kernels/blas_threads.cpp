#include "kernels/blas_threads.hpp"

#include <cblas.h>
#include <dlfcn.h>

namespace actorps {

void use_one_blas_thread() {
  // OpenBLAS 0.3.21's openblas_set_num_threads starts the pool again when it was stopped, even
  // for one thread: it is called only when the count is not one already.
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

void stop_blas_thread_pool() {
  use_one_blas_thread();
  // OpenBLAS's own fork handler, which joins the pool; not in cblas.h, so looked up: a BLAS
  // without it still links, and loses nothing.
  using shutdown_fn = int (*)();
  if (auto shutdown = reinterpret_cast<shutdown_fn>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_")))
    shutdown();
}

} // namespace actorps
