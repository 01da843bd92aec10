// Flush-to-zero for the calling thread: optimizer state (momentum, Adam moments) that decays
// towards zero otherwise ends up in denormals, which cost x86 cores ~100 cycles per operation.
#pragma once

#if defined(__x86_64__) || defined(_M_X64) || defined(__SSE__)
#include <xmmintrin.h>
#define ACTORPS_HAS_MXCSR 1
#endif

namespace actorps {

/// Sets FTZ (denormal results become 0) and DAZ (denormal inputs read as 0) in this thread's
/// MXCSR. Call once at the start of every thread that runs kernels. No-op off x86.
inline void flush_denormals_to_zero() {
#if defined(ACTORPS_HAS_MXCSR)
  _mm_setcsr(_mm_getcsr() | 0x8040u);  // 0x8000 FTZ | 0x0040 DAZ
#endif
}

} // namespace actorps
