// OpenBLAS (the pthread build Debian ships) starts a pool of (cores - 1) threads when it loads,
// before main, and each spins on sched_yield for 2^28 TSC cycles before it sleeps: about 0.13
// CPU seconds in every process (measured: `actorps simulate --steps 20` 0.78-0.85 against
// 0.67-0.73 CPU seconds with OPENBLAS_NUM_THREADS=1), in ps, chief and evaluator processes that
// never call BLAS too, and inside the first timed round trips of a benchmark. Nothing here uses
// the pool: each compute actor runs its BLAS calls on its own thread, one BLAS thread each
// (make_cpu_backend).
#pragma once

namespace actorps {

/// One BLAS thread (the calling one) for every call from now on, without starting OpenBLAS's
/// pool again if it was stopped.
void use_one_blas_thread();

/// For a program's main, early: one BLAS thread from now on, and OpenBLAS's pool stopped (its
/// threads joined). Not for a library: an embedding program may use the pool for its own work.
/// With a BLAS that has no such pool, only the thread count is set.
void stop_blas_thread_pool();

} // namespace actorps
