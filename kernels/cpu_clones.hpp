// ACTORPS_CPU_CLONES: a CPU loop compiled twice, for the baseline x86-64 (4 floats wide) and for
// AVX2 (8 wide), the one to run picked once at load time by the CPU (an ifunc). Why not one
// -mavx2 build: the binary must start on any x86-64. Neither clone uses FMA (the avx2 target
// does not enable it, and such files are built with -ffp-contract=off: kernels/CMakeLists.txt),
// so each value is computed with the same IEEE operations in both: the clones agree bit for bit.
#pragma once

// ACTORPS_BASELINE_ONLY: the baseline alone, for the tests' twin build of these loops
// (tests/baseline_twins/), which holds the clone this machine does not pick to the one it does.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(ACTORPS_BASELINE_ONLY)
#define ACTORPS_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ACTORPS_CPU_CLONES
#endif
