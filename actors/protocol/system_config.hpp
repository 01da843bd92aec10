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
  std::chrono::milliseconds heartbeat{500};
  /// Silence after which a peer counts as lost (a frozen process). A peer that dies closes its
  /// connections and is noticed at once; this only bounds the frozen case, so it leaves room
  /// for an overloaded machine.
  std::chrono::milliseconds peer_timeout{4000};
};

/// Registers actorps' message types and error category, sets the scheduler's thread count
/// (0: one per core) and flushes denormals in every thread CAF starts; with `network`, loads
/// CAF's middleman with heartbeats and a connection timeout.
void configure_system(caf::actor_system_config& cfg, int scheduler_threads,
                      const std::optional<network_settings>& network = std::nullopt);

} // namespace actorps
