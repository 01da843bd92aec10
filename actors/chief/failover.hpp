// A fail-over episode: the actor that hands a lost primary's shard over to its hot standby
// (--replicas 1) while training goes on, spawned and monitored by the chief (standbys.cpp), and
// ending in one report to it: failover_done or failover_failed (messages.hpp). failover.cpp
// draws its steps.
#pragma once

#include "actors/protocol/messages.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace actorps {

/// Who an episode reports to (the chief; a test's own actor).
using failover_listener = caf::typed_actor<caf::reacts_to<failover_atom, failover_done>,
                                           caf::reacts_to<failover_atom, failover_failed>>;

/// A fail-over episode: (leave, w) says worker w is lost, so that its reroute answer, which
/// may never come, counts as nothing re-sent. Only actors of its process may send it.
using failover_episode_actor = caf::typed_actor<caf::reacts_to<leave_atom, int32_t>>;

/// What a fail-over episode is given: everything it needs, nothing of the chief's state.
struct failover_plan {
  int32_t shard = 0;
  ps_shard_actor promoted;  ///< the ready standby that takes the shard over
  /// The workers asked to send their request in flight to it again, by index.
  std::vector<std::pair<int32_t, worker_actor>> workers;
  /// Workers lost for good: the promoted shard is told again that they left (a leave to the
  /// lost primary may have died with it before reaching the standby).
  std::vector<int32_t> left;
  std::chrono::milliseconds request_timeout{std::chrono::minutes(2)};
  std::chrono::steady_clock::time_point detected;  ///< when the primary was found lost
};

/// Spawns a fail-over episode; it reports to `report_to` once and quits (as it does when
/// `report_to` goes down first).
failover_episode_actor spawn_failover_episode(caf::actor_system& sys, failover_listener report_to,
                                              failover_plan plan);

} // namespace actorps
