// Spare worker tasks of a distributed run, as spare ps tasks are (spare_tasks.cpp). A worker
// task whose cluster spec lists it beyond the run's workers (an orchestrator scaled the worker
// replica set up) joins and waits as a spare: monitored, logged, counted (a "spare" event),
// training nothing. A change of the number of workers (actorps scale --workers, at a clock
// every worker pauses at: worker_pause.cpp) takes spares in as the new workers, each handed its
// share of the minibatches no worker has trained (data_plan.hpp; the plan travels in its
// RoleSetup); a shrink stops the worker tasks beyond the new number once they have trained
// their clocks before the change, and they exit 0, so that an orchestrator does not restart
// them. The end of the run stops the spares as it stops every task (phases.cpp).
#include "actors/chief/spare_seats.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"

namespace actorps::chief_detail {

bool is_spare_worker_join(self_ptr self, const std::string& type, int32_t index) {
  const auto& st = self->state;
  return st.cfg.remote && type == "worker"
         && index >= static_cast<int32_t>(st.worker_nodes.size());
}

caf::error seat_spare_worker(self_ptr self, int32_t index, task_node_actor node,
                             const std::string& view) {
  auto& st = self->state;
  const auto name = worker_role(index).text();
  if (!node) return caf::make_error(caf::sec::invalid_argument, name + " offered no node");
  if (index >= max_workers)
    return make_error(errc::cluster_mismatch, name + ": a run has " + std::to_string(max_workers)
                                                + " workers at most");
  auto found = spare_address(self, worker_role(index), view);
  if (!found) return std::move(found.error());
  const auto address = *found;
  if (auto it = st.spare_workers.find(index); it != st.spare_workers.end()) {
    if (it->second.node == node) return caf::none;  // said twice
    self->demonitor(it->second.node.address());  // a new process of it: the previous is gone
    st.spare_workers.erase(it);
  }
  self->monitor(node);
  st.spare_workers[index] = {std::move(node), address};
  note_spare_joined(self, worker_role(index), address, "workers",
                    static_cast<int32_t>(st.worker_nodes.size()), st.spare_workers.size(),
                    "--workers");
  return caf::none;
}

bool on_spare_worker_down(self_ptr self, const caf::down_msg& dm) {
  return drop_gone_spare(self->state.spare_workers, role_kind::worker, dm,
                         [](const chief_state::spare_worker& t) { return t.node; });
}

std::string missing_spare_workers(const chief_state& st, int32_t from, int32_t to) {
  return missing_spare(st.spare_workers, role_kind::worker, from, to, "worker tasks");
}

void take_spare_workers(self_ptr self, int32_t from, int32_t to) {
  auto& st = self->state;
  auto& remote = *st.cfg.remote;
  for (int32_t w = to; w < from; ++w) {
    log_line("chief", worker_role(w).text() + " leaves the run: its clocks before the change "
                        "are trained; it is stopped and exits 0");
    if (auto& node = st.worker_nodes[w]) {
      self->demonitor(node.address());
      self->send_exit(node, caf::exit_reason::user_shutdown);
    }
    st.awaiting_rejoin.erase(worker_role(w));
    st.pending_starts.erase(w);
  }
  const auto size = static_cast<std::size_t>(to);
  st.worker_nodes.resize(size);
  remote.workers.resize(size);
  for (int32_t w = from; w < to; ++w) {
    auto spare = st.spare_workers.extract(w);  // missing_spare_workers said each is there
    st.worker_nodes[w] = std::move(spare.mapped().node);  // monitored since it joined
    remote.workers[w] = spare.mapped().address;
    log_line("chief", worker_role(w).text() + " is taken into the run");
  }
}

} // namespace actorps::chief_detail
