// The BLAS a program's main sets up before any GEMM, as the `actorps` command does. Not for a
// library: a program that embeds the runtime decides this for its whole process. These are the
// kernels' own functions (kernels/blas_core.hpp and kernels/blas_threads.hpp say why each is
// needed); actors/node/blas.cpp holds both declarations together so that they cannot drift.
#pragma once

#include <string>

namespace actorps {

/// When the loaded OpenBLAS fell back to kernels this CPU outgrew and OPENBLAS_CORETYPE is not
/// set, runs the program again (the binary /proc/self/exe names, `argv`) with it naming the
/// better core, and does not return. Returns when there is nothing to do or the exec failed
/// (said on stderr). Call it first in main.
void rerun_with_better_blas_core(char** argv);

/// One BLAS thread (the calling one) from now on, and OpenBLAS's own thread pool stopped: the
/// runtime runs each compute actor's BLAS calls on that actor's thread.
void stop_blas_thread_pool();

/// The core whose kernels the loaded OpenBLAS uses ("Haswell", "SkylakeX", ...).
std::string blas_core_in_use();

} // namespace actorps
