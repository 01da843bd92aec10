// Spare ps tasks of a distributed run. A ps task whose cluster spec lists it beyond the run's
// shards (an orchestrator scaled the ps replica set up: the new task's spec lists one more ps
// than the chief's) joins and waits as a spare: monitored, logged, counted (a "spare" event),
// serving nothing. A growth (actorps scale, scale_request.cpp) takes spares in as the new
// shards, in place of the shards a resize spawns in one process; a shrink stops the shards
// beyond the new size once their state is in hand (drained), and their tasks exit 0, so that
// an orchestrator does not restart them. The end of the run stops the spares as it stops
// every task (phases.cpp).
#include "actors/chief/cluster_view.hpp"
#include "actors/chief/state.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"

namespace actorps::chief_detail {

bool is_spare_join(self_ptr self, int32_t index) {
  const auto& st = self->state;
  return st.cfg.remote && index >= static_cast<int32_t>(st.shards.size());
}

caf::error seat_spare(self_ptr self, int32_t index, ps_shard_actor shard, ps_task_actor task,
                      const std::string& view) {
  auto& st = self->state;
  const auto name = ps_role(index).text();
  if (!shard || !task) return caf::make_error(caf::sec::invalid_argument, name + " offered no shard");
  auto seat = seat_for_spare(view, st.cfg.remote->cluster_view, "ps", index);
  if (!seat.refusal.empty()) {
    log_line(log_level::error, "chief", "refused " + name + "'s join as a spare: " + seat.refusal);
    return make_error(errc::cluster_mismatch, name + ": " + seat.refusal);
  }
  const auto address = seat.address;
  if (auto it = st.spares.find(index); it != st.spares.end()) {
    if (it->second.shard == shard) return caf::none;  // said twice
    self->demonitor(it->second.shard.address());  // a new process of it: the previous is gone
    st.spares.erase(it);
  }
  self->monitor(shard);
  st.spares[index] = {std::move(shard), std::move(task), address};
  ++st.spares_joined;
  const auto shards = static_cast<int32_t>(st.shards.size());
  log_line("chief", name + " joined as a spare at " + address.text() + " (the run has "
                      + std::to_string(shards) + " shards; actorps scale --ps "
                      + std::to_string(std::max(shards + 1, index + 1)) + " takes it in)");
  st.metrics->write(json_object().add("event", "spare").add("task", name)
                      .add("address", address.text()).add("shards", shards)
                      .add("spares", static_cast<uint64_t>(st.spares.size()))
                      .add("spares_joined", st.spares_joined).add("wall_s", st.elapsed()));
  st.metrics->flush();
  return caf::none;
}

bool on_spare_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  for (auto it = st.spares.begin(); it != st.spares.end(); ++it) {
    if (it->second.shard.address() != dm.source) continue;
    log_line(log_level::warn, "chief", ps_role(it->first).text() + ", a spare, is gone ("
                                         + describe(dm.reason) + ")");
    st.spares.erase(it);
    return true;
  }
  return false;
}

std::string missing_spares(const chief_state& st, int32_t from, int32_t to) {
  for (int32_t s = from; s < to; ++s)
    if (!st.spares.count(s))
      return "no spare " + ps_role(s).text() + " has joined (start it with a cluster spec that "
             "lists " + std::to_string(to) + " ps tasks)";
  return "";
}

void take_spares(self_ptr self, int32_t from, int32_t to) {
  auto& st = self->state;
  auto& remote = *st.cfg.remote;
  for (int32_t s = to; s < from; ++s) {
    log_line("chief", ps_role(s).text() + " leaves the run: its state is in hand; it is stopped "
                        "and exits 0");
    self->demonitor(st.shards[s].address());
    self->send_exit(st.shards[s], caf::exit_reason::user_shutdown);
  }
  const auto size = static_cast<std::size_t>(to);
  st.shards.resize(size);
  st.ps_tasks.resize(size);
  st.primary_host.resize(size);
  remote.ps.resize(size);
  for (int32_t s = from; s < to; ++s) {
    auto spare = st.spares.extract(s);  // missing_spares said each is there
    auto& taken = spare.mapped();
    st.shards[s] = std::move(taken.shard);  // monitored since it joined
    st.ps_tasks[s] = std::move(taken.task);
    st.primary_host[s] = s;
    remote.ps[s] = taken.address;  // workers dial it there
    log_line("chief", ps_role(s).text() + " takes shard " + std::to_string(s) + " into the run");
  }
}

} // namespace actorps::chief_detail
