// What spare ps tasks (spare_tasks.cpp) and spare worker tasks (spare_workers.cpp) share: the
// address one joins from, the word that it joined, the one missing for a growth, the one whose
// process is gone.
#pragma once

#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

namespace actorps::chief_detail {

/// Where spare `role` serves, from its cluster view (`view`), or why its join is refused
/// (cluster_view.hpp: seat_for_spare), logged.
caf::expected<host_port> spare_address(self_ptr self, role_id role, const std::string& view);

/// Says (log line, a "spare" event) that `role` joined as a spare at `address`: the run has
/// `size` `what` ("shards", "workers"), `spares` spares of its kind, and `scale_flag` N (past
/// the run's size and its index) takes it in.
void note_spare_joined(self_ptr self, role_id role, const host_port& address, const char* what,
                       int32_t size, std::size_t spares, const char* scale_flag);

/// "" when `spares` holds kind:from .. kind:to-1; else the first missing, worded (`tasks`:
/// "ps tasks", "worker tasks").
template <class Spares>
std::string missing_spare(const Spares& spares, role_kind kind, int32_t from, int32_t to,
                          const char* tasks) {
  for (int32_t i = from; i < to; ++i)
    if (!spares.count(i))
      return "no spare " + role_id{kind, i}.text() + " has joined (start it with a cluster spec "
             "that lists " + std::to_string(to) + " " + tasks + ")";
  return "";
}

/// Drops the spare of `spares` whose process `dm` says is gone (`handle(spare)`: its monitored
/// handle), logged; false when `dm` is none of theirs.
template <class Spares, class Handle>
bool drop_gone_spare(Spares& spares, role_kind kind, const caf::down_msg& dm, Handle handle) {
  for (auto it = spares.begin(); it != spares.end(); ++it) {
    if (handle(it->second).address() != dm.source) continue;
    log_line(log_level::warn, "chief", role_id{kind, it->first}.text() + ", a spare, is gone ("
                                         + describe(dm.reason) + ")");
    spares.erase(it);
    return true;
  }
  return false;
}

} // namespace actorps::chief_detail
