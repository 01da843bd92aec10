// Which OpenBLAS kernels run the GEMMs. Debian 12's OpenBLAS (0.3.21) picks its kernels by the
// CPU's model number when it loads; a model newer than it (an Emerald Rapids Xeon, family 6
// model 207, for one) is not in its table and gets the Prescott kernels, SSE3 only: the default
// Fashion-MNIST run went 3.0x slower on such a CPU (scripts/bench/blas_core.sh). OpenBLAS
// reads OPENBLAS_CORETYPE when it loads, before main, so a program can only fix the choice by
// running itself again with the variable set.
#pragma once

#include <string>
#include <string_view>

namespace actorps {

/// The vector instructions that decide which OpenBLAS kernels fit (enabled by the OS too).
struct cpu_vector_units {
  bool avx2_fma = false;  // AVX2 and FMA3: OpenBLAS's Haswell kernels
  bool avx512 = false;    // AVX-512 F, BW, DQ and VL: its SkylakeX kernels
};

/// This CPU's, as the running OS enables them.
cpu_vector_units this_cpu_vector_units();

/// The core type (OPENBLAS_CORETYPE's spelling) to ask OpenBLAS for instead of `chosen`, the
/// core it chose, on a CPU with `units`; empty when its choice stands. Only OpenBLAS's fallback
/// for an x86-64 CPU it does not know ("Prescott") is overruled: any other choice is a model
/// OpenBLAS recognised, and it may have chosen lower on purpose.
std::string better_blas_core(std::string_view chosen, cpu_vector_units units);

/// The core whose kernels the loaded OpenBLAS uses (openblas_get_corename).
std::string blas_core_in_use();

/// better_blas_core for the core in use on this CPU: what this process is missing, or empty.
std::string blas_core_missed();

/// For a program's main, before anything else: when OpenBLAS fell back to kernels this CPU
/// outgrew and the user did not set OPENBLAS_CORETYPE, runs the program again (execv of the
/// binary /proc/self/exe names, the same arguments) with OPENBLAS_CORETYPE naming the better
/// core, and does not return. Returns when there is nothing to do, or when the exec failed
/// (said on stderr). A user's own OPENBLAS_CORETYPE is always kept. Not for a library: an
/// embedding program calls it, or sets the variable itself (make_cpu_backend says which, once).
void rerun_with_better_blas_core(char** argv);

} // namespace actorps
