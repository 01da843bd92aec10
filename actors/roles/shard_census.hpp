// The shards alive in this process, for whoever reports on the process as a whole (its /metrics
// endpoint, actors/deploy/metrics_endpoint.hpp), which reads their counters by asking each for
// its stats, as the chief does. A shard enters when it is spawned and says when it becomes a
// standby or is promoted: rare events, under a lock; nothing on a push's or a pull's path.
// The census holds no shard alive: a stopped one drops out.
#pragma once

#include "actors/protocol/messages.hpp"

#include <caf/actor_addr.hpp>
#include <caf/actor_control_block.hpp>

#include <cstdint>
#include <mutex>
#include <vector>

namespace actorps {

class shard_census {
public:
  /// One shard alive now.
  struct member {
    int32_t shard = -1;
    bool standby = false;  ///< holds a primary's state as its standby (not promoted)
    ps_shard_actor actor;
  };

  /// This process's census.
  static shard_census& process();

  void add(int32_t shard, const ps_shard_actor& actor);
  /// The shard at `addr` serves as a standby now (true) or as a primary (false).
  void set_standby(const caf::actor_addr& addr, bool standby);
  /// The shards alive now of actor system `sys` (several may run in one process, one after the
  /// other: a test's runs), in the order they were spawned.
  std::vector<member> alive(const caf::actor_system& sys);

private:
  struct entry {
    int32_t shard;
    bool standby;
    caf::weak_actor_ptr actor;
  };
  std::mutex mutex_;
  std::vector<entry> entries_;
};

} // namespace actorps
