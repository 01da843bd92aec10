// Spare worker tasks of a distributed run, as spare ps tasks are (spare_tasks.cpp). A worker
// task whose cluster spec lists it beyond the run's workers (an orchestrator scaled the worker
// replica set up) joins and waits as a spare: monitored, logged, counted (a "spare" event),
// training nothing. A change of the number of workers (actorps scale --workers, at a clock
// every worker pauses at: worker_pause.cpp) takes spares in as the new workers, each handed its
// share of the minibatches no worker has trained (data_plan.hpp; the plan travels in its
// RoleSetup); a shrink stops the worker tasks beyond the new number once they have trained
// their clocks before the change, and they exit 0, so that an orchestrator does not restart
// them. The end of the run stops the spares as it stops every task (phases.cpp).
#include "actors/chief/cluster_view.hpp"
#include "actors/chief/state.hpp"

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
  auto seat = seat_for_spare(view, st.cfg.remote->cluster_view, "worker", index);
  if (!seat.refusal.empty()) {
    log_line(log_level::error, "chief", "refused " + name + "'s join as a spare: " + seat.refusal);
    return make_error(errc::cluster_mismatch, name + ": " + seat.refusal);
  }
  const auto address = seat.address;
  if (auto it = st.spare_workers.find(index); it != st.spare_workers.end()) {
    if (it->second.node == node) return caf::none;  // said twice
    self->demonitor(it->second.node.address());  // a new process of it: the previous is gone
    st.spare_workers.erase(it);
  }
  self->monitor(node);
  st.spare_workers[index] = {std::move(node), address};
  ++st.spares_joined;
  const auto workers = static_cast<int32_t>(st.worker_nodes.size());
  log_line("chief", name + " joined as a spare at " + address.text() + " (the run has "
                      + std::to_string(workers) + " workers; actorps scale --workers "
                      + std::to_string(std::max(workers + 1, index + 1)) + " takes it in)");
  st.metrics->write(json_object().add("event", "spare").add("task", name)
                      .add("address", address.text()).add("workers", workers)
                      .add("spares", static_cast<uint64_t>(st.spare_workers.size()))
                      .add("spares_joined", st.spares_joined).add("wall_s", st.elapsed()));
  st.metrics->flush();
  return caf::none;
}

bool on_spare_worker_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  for (auto it = st.spare_workers.begin(); it != st.spare_workers.end(); ++it) {
    if (it->second.node.address() != dm.source) continue;
    log_line(log_level::warn, "chief", worker_role(it->first).text() + ", a spare, is gone ("
                                         + describe(dm.reason) + ")");
    st.spare_workers.erase(it);
    return true;
  }
  return false;
}

std::string missing_spare_workers(const chief_state& st, int32_t from, int32_t to) {
  for (int32_t w = from; w < to; ++w)
    if (!st.spare_workers.count(w))
      return "no spare " + worker_role(w).text() + " has joined (start it with a cluster spec "
             "that lists " + std::to_string(to) + " worker tasks)";
  return "";
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
