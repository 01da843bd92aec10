// The exit status of every actorps process of a distributed run, chosen for orchestrators that
// restart by exit code (Kubeflow TFJob's ExitCode restart policy retries 130, 137, 138 and 143
// and treats 1, 2, 126, 127, 128 and 139 as permanent). README's "Exit codes" is the table.
#pragma once

namespace actorps::exit_code {

inline constexpr int success = 0;    ///< the run completed (a task: the chief ended the run)
inline constexpr int failed = 1;     ///< the run failed in a way a restart would repeat
inline constexpr int usage = 2;      ///< bad flags, cluster spec or input: fix the command
/// A restart can cure it: the chief was lost, a peer stayed unreachable past
/// --connect-timeout, the task's own host name never resolved, or the chief stopped the run
/// early (it was signalled) and will go on when restarted.
inline constexpr int retryable = 138;

/// A process stopped by a signal it handled: 128 + the signal, as a shell reports a process
/// the signal killed (SIGINT 130, SIGTERM 143; both retryable for TFJob).
constexpr int signalled(int signal) { return 128 + signal; }

} // namespace actorps::exit_code
