#include "actors/roles/shard_census.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>

#include <algorithm>

namespace actorps {

shard_census& shard_census::process() {
  static shard_census census;
  return census;
}

void shard_census::add(int32_t shard, const ps_shard_actor& actor) {
  std::lock_guard<std::mutex> guard(mutex_);
  // Stopped shards go first: a long process (rollbacks respawn shards) keeps no trail of them.
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const entry& e) { return !e.actor.lock(); }),
                 entries_.end());
  entries_.push_back({shard, false, caf::actor_cast<caf::weak_actor_ptr>(actor)});
}

void shard_census::set_standby(const caf::actor_addr& addr, bool standby) {
  std::lock_guard<std::mutex> guard(mutex_);
  for (auto& e : entries_)
    if (auto strong = e.actor.lock(); strong && strong->address() == addr) e.standby = standby;
}

std::vector<shard_census::member> shard_census::alive(const caf::actor_system& sys) {
  std::lock_guard<std::mutex> guard(mutex_);
  std::vector<member> out;
  for (const auto& e : entries_)
    if (auto strong = e.actor.lock(); strong && strong->home_system == &sys)
      out.push_back({e.shard, e.standby, caf::actor_cast<ps_shard_actor>(std::move(strong))});
  return out;
}

} // namespace actorps
