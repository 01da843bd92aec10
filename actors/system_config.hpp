// The actor_system configuration every actorps process uses, so that every process registers
// the same types under the same names and sets the same network timeouts.
#pragma once

#include <caf/actor_system_config.hpp>

#include <chrono>
#include <optional>

namespace actorps {

/// Failure detection between processes. Both sides must send heartbeats: a connection timeout
/// without heartbeats from the peer gives false alarms (STACK.md), so every process sets both.
struct network_settings {
  std::chrono::milliseconds heartbeat{250};
  std::chrono::milliseconds peer_timeout{1500};  ///< silence after which a peer counts as lost
};

/// Registers actorps' message types and error category, sets the scheduler's thread count
/// (0: one per core) and flushes denormals in every thread CAF starts; with `network`, loads
/// CAF's middleman with heartbeats and a connection timeout.
void configure_system(caf::actor_system_config& cfg, int scheduler_threads,
                      const std::optional<network_settings>& network = std::nullopt);

} // namespace actorps
