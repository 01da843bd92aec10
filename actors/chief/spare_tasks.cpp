// Spare ps tasks of a distributed run. A ps task whose cluster spec lists it beyond the run's
// shards (an orchestrator scaled the ps replica set up: the new task's spec lists one more ps
// than the chief's) joins and waits as a spare: monitored, logged, counted (a "spare" event),
// serving nothing. A growth (actorps scale, scale_request.cpp) takes spares in as the new
// shards, in place of the shards a resize spawns in one process; a shrink stops the shards
// beyond the new size once their state is in hand (drained), and their tasks exit 0, so that
// an orchestrator does not restart them. The end of the run stops the spares as it stops
// every task (phases.cpp).
#include "actors/chief/spare_seats.hpp"

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
  auto found = spare_address(self, ps_role(index), view);
  if (!found) return std::move(found.error());
  const auto address = *found;
  if (auto it = st.spares.find(index); it != st.spares.end()) {
    if (it->second.shard == shard) return caf::none;  // said twice
    self->demonitor(it->second.shard.address());  // a new process of it: the previous is gone
    st.spares.erase(it);
  }
  self->monitor(shard);
  st.spares[index] = {std::move(shard), std::move(task), address};
  note_spare_joined(self, ps_role(index), address, "shards", static_cast<int32_t>(st.shards.size()),
                    st.spares.size(), "--ps");
  return caf::none;
}

bool on_spare_down(self_ptr self, const caf::down_msg& dm) {
  return drop_gone_spare(self->state.spares, role_kind::ps, dm,
                         [](const chief_state::spare_task& t) { return t.shard; });
}

std::string missing_spares(const chief_state& st, int32_t from, int32_t to) {
  return missing_spare(st.spares, role_kind::ps, from, to, "ps tasks");
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
