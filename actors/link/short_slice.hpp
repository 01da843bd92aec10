// Asks the kernel to run the calling thread with a short time slice: for the threads that wake
// to move a request or an answer between processes (the ps process's event loop, a worker's
// reply readers), on the critical path of every clock.
//
// Why: Linux's EEVDF scheduler (6.6 and later) lets a thread that wakes up preempt a running
// one only when the woken thread's deadline (its slice after its eligible time) comes first;
// with the default slice (0.75-3 ms) a reader waking while the kernels keep every core busy
// waits up to a slice of theirs, on each of the three wake-ups of a request across processes.
// A short slice (sched_setattr's sched_runtime with SCHED_OTHER, Linux 6.12 and later, no
// privilege needed) gives the woken thread an earlier deadline: it runs at once, for a little
// while, which is all these threads need. Older kernels refuse the call (EINVAL) or ignore the
// field: nothing changes there.
#pragma once

#include <chrono>

namespace actorps {

/// The slice asked for.
inline constexpr std::chrono::microseconds short_slice{100};

/// Asks for `short_slice` for the calling thread, keeping its nice value; false when the kernel
/// refused (the thread keeps its slice).
bool request_short_slice();

} // namespace actorps
