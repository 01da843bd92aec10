// `actorps simulate` as a library call: the run its options describe (training_flags), planned
// by the one planner, every role an actor of this process; then its summary and its export.
#pragma once

#include "actors/ps.hpp"
#include "actors/ps/training_flags.hpp"

#include <caf/expected.hpp>

#include <functional>
#include <memory>
#include <string>

namespace actorps {

/// Asks a running run to stop, saying why (a signal's name, "SIGTERM"): a followed stream ends
/// as at its last clock, any other run stops at once. Callable from any thread while it runs.
using stop_call = std::function<void(const std::string& why)>;

/// One run in this process, from the options of `actorps simulate`.
///
///     actorps::simulation_run run(flags);   // throws usage_error naming the flag
///     auto summary = run.run();             // caf::expected<run_summary>
///     if (summary) status = run.finish(*summary);
class simulation_run {
public:
  /// Plans the run `flags` describe and loads its data, saying on stdout what it decided (the
  /// backend `auto` chose, the checkpoint it resumes); throws usage_error naming the flag, or
  /// the data's own error (a std::exception naming the file).
  explicit simulation_run(const training_flags& flags);
  ~simulation_run();
  simulation_run(simulation_run&&) noexcept;
  simulation_run& operator=(simulation_run&&) noexcept;

  /// Whether it follows a growing directory (--follow): a stop (stop_call) ends it.
  bool follows() const;

  /// Trains to the end; `started`, when given, receives the call that stops the run once it
  /// has begun. The summary, or the error that ended the run. Once only.
  caf::expected<run_summary> run(const std::function<void(stop_call)>& started = {});

  /// Prints the summary to stdout, then exports the run (--export-dir): the exit status it
  /// calls for (README's "Exit codes"; a failure said on stderr).
  int finish(const run_summary& summary);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace actorps
