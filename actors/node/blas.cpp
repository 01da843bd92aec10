// The front door's BLAS calls are the kernels' own: declared in both places, checked here to be
// the same functions (a declaration that differs from the other in its return type does not
// compile).
#include "actors/ps/blas.hpp"

#include "kernels/blas_core.hpp"
#include "kernels/blas_threads.hpp"
