// `actorps simulate`: the whole cluster — P shards, W workers, the chief and the evaluator — as
// actors of one actor_system in this process.
#pragma once

#include "actors/chief/chief.hpp"

#include <caf/expected.hpp>

#include <functional>
#include <string>

namespace actorps {

struct simulation_options {
  chief_config chief;
  int scheduler_threads = 0;   ///< CAF scheduler threads; 0: one per core
  /// Serve the process's /metrics on 127.0.0.1 at this port (metrics_endpoint.hpp); 0: not.
  uint16_t prometheus_port = 0;
};

/// Runs one training to its end and returns the summary (or the error that ended it). Every
/// actor has stopped when it returns. `on_start`, when given, receives once the run has begun a
/// function that asks the chief to stop (interrupt.cpp; `why`: "SIGTERM"), callable from any
/// thread until simulate returns.
caf::expected<run_summary> simulate(
  simulation_options opts,
  const std::function<void(std::function<void(const std::string& why)>)>& on_start = {});

/// Sends (run) to a chief and blocks until its summary, its error, or its death; `sent`, when
/// given, runs once (run) is in the chief's mailbox (what is sent to it afterwards comes later).
caf::expected<run_summary> run_to_end(caf::actor_system& sys, const chief_actor& chief,
                                      const std::function<void()>& sent = {});

} // namespace actorps
