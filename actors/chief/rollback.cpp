// A lost shard sends the whole run back to the newest checkpoint, one step per function, each
// going on to the next once its work is done:
//
//   stop_roles           every worker and the evaluator are stopped (their state is ahead of
//                        the checkpoint), the checkpoint and evaluation in flight abandoned, the
//                        fail-overs under way aborted
//   wait_for_shards      simulate: a new shard is spawned; distributed: its restarted process
//                        joins (on_rejoined_shard) within join_timeout, or the run fails
//   restore_every_shard  a rollback episode, an actor of its own (rollback_episode.cpp draws
//                        its steps: loading -> restoring -> done | failed), loads the newest
//                        valid checkpoint (none yet: the initial values at clock 0) and has every
//                        shard take its part of it, with every worker's new incarnation; it
//                        answers with the checkpoint restored, or the error
//   restart_roles        every worker at the checkpoint's clock (a worker whose process is gone
//                        is left out), and the evaluator
//   resume_training      the workers start; processes that came back meanwhile take over
//
// The run is in phase rolling_back throughout (phases.cpp); a step that finds it in another
// phase (the run failed meanwhile: stopping) does nothing. A shard lost while the run is going
// back (killed again, or another one: an orchestrator restarts what dies) starts the rollback
// over: the episode under way is aborted (killed, its answer ignored: chief_state::restoring),
// the later steps of the earlier attempt do nothing (st.rollbacks counts attempts), the roles
// are stopped again, and the rollback waits for every missing shard, each within join_timeout
// of that loss. An episode's failure: a shard lost while restoring waits for that shard's down
// message (the rollback starts over); any other error fails the run.
#include "actors/chief/state.hpp"

#include "actors/protocol/checkpoint_codec.hpp"
#include "actors/protocol/log.hpp"
#include "actors/storage/checkpoint_resize.hpp"

#include <filesystem>

namespace actorps::chief_detail {

namespace {

/// Whether attempt `attempt` (st.rollbacks when it began) is still the one under way.
bool still_rolling_back(self_ptr self, uint64_t attempt) {
  return self->state.phase == run_phase::rolling_back && self->state.rollbacks == attempt;
}

/// The shards whose slot is empty: lost, their process not back yet.
std::vector<int32_t> missing_shards(const chief_state& st) {
  std::vector<int32_t> out;
  for (int32_t s = 0; s < static_cast<int32_t>(st.shards.size()); ++s)
    if (!st.shards[s]) out.push_back(s);
  return out;
}

std::string role_names(const std::vector<int32_t>& shards) {
  std::string out;
  for (auto s : shards) out += (out.empty() ? "" : ", ") + ps_role(s).text();
  return out;
}

/// Whether the process that hosts `role` (distributed runs) is connected now.
bool node_present(const chief_state& st, role_id role) {
  return role.kind == role_kind::worker ? static_cast<bool>(st.worker_nodes[role.index])
                                        : static_cast<bool>(st.evaluator_node);
}

void resume_training(self_ptr self, int64_t clock) {
  auto& st = self->state;
  enter(self, run_phase::training);
  build_missing_standbys(self, true);
  for (auto& w : st.workers)
    if (w) self->send(w, start_atom::value);
  arm_next_resize(self);  // the state asked for it, if any, was replaced by the checkpoint's
  recovery_cost cost;
  cost.lost_clocks = st.rollback.failed_at - clock;
  cost.retrained_samples = st.rollback.retrained * st.cfg.batch;
  record_recovery(self, ps_role(st.rollback.shard), st.rollback.detected, clock, cost);
  // processes that came back while the rollback ran and were not started by it take over now;
  // a worker still missing gets its --connect-timeout again (its wait's end, due while the
  // rollback ran, was ignored then)
  auto back = st.awaiting_rejoin;
  for (const auto& [role, since] : back)
    if (node_present(st, role))
      on_rejoined_node(self, role);
    else if (role.kind == role_kind::worker && st.cfg.remote)
      self->delayed_send(self, st.cfg.remote->join_timeout, worker_due_atom::value, role.index,
                         static_cast<int64_t>(since.time_since_epoch().count()));
  check_all_done(self);
}

} // namespace

void restart_roles_at(self_ptr self, int64_t clock, std::function<void(int64_t)> then,
                      bool keep_workers) {
  auto& st = self->state;
  st.start_clock = clock;
  st.last_checkpoint = std::min(st.last_checkpoint, clock);
  auto every = st.cfg.checkpoints.every;
  st.next_checkpoint = every > 0 ? (clock / every + 1) * every : st.cfg.steps;
  auto eval_every = st.cfg.eval_every;
  st.next_eval = eval_every > 0 ? (clock / eval_every + 1) * eval_every : 0;
  // (a role started in this process answers at once: the count is complete before the last)
  auto retrained = std::make_shared<int64_t>(0);
  auto one_started = after_all(st.workers.size() + 1, [=] { then(*retrained); });
  if (!st.cfg.remote || st.evaluator_node) st.awaiting_rejoin.erase(evaluator_role());
  for (int32_t w = 0; w < static_cast<int32_t>(st.workers.size()); ++w) {
    // Each worker goes on from where its data was at the checkpoint: what it trained since is
    // trained again (counted), nothing is skipped.
    auto batch = st.batches_at(w, clock);
    *retrained += std::max<int64_t>(0, st.batches_trained(w) - batch);
    auto& spans = st.data_spans[w];
    while (spans.size() > 1 && spans.back().from >= clock) spans.pop_back();
    if (spans.back().from >= clock) spans.clear();
    spans.push_back({clock, std::numeric_limits<int64_t>::max(), clock - batch});
    st.clocks[w] = clock;
    if (st.cfg.remote && !st.worker_nodes[w]) {  // its process is gone: not waited for here,
      st.data_stopped(w);                        // (nothing trained until its next one comes)
      st.live[w] = false;
      for (auto& s : st.shards) self->send(s, leave_atom::value, w);
      // but its next process takes over once it joins (lost while the run went back, or
      // parked: its loss awaited nothing yet), unless it may not be replaced any more
      if (!st.awaiting_rejoin.count(worker_role(w)) && may_replace(st, st.replacements[w]))
        await_worker_process(self, w, std::chrono::steady_clock::now());
      one_started();
      continue;
    }
    st.awaiting_rejoin.erase(worker_role(w));  // started here
    if (keep_workers && st.workers[w]) {
      resize_worker(self, w, clock, [=](bool) { one_started(); });
      continue;
    }
    start_worker(self, w, clock, [=](bool) { one_started(); });
  }
  start_evaluator(self, [=](bool) { one_started(); });
}

namespace {

void restart_roles(self_ptr self, int64_t clock) {
  auto attempt = self->state.rollbacks;
  restart_roles_at(self, clock, [=](int64_t retrained) {
    if (!still_rolling_back(self, attempt)) return;
    self->state.rollback.retrained = retrained;
    resume_training(self, clock);
  });
}

/// The next delta checkpoint continues the chain restored when it lies in this run's directory
/// (not a resumed run's elsewhere), whatever the run committed after it before going back; a
/// checkpoint cut for another placement (taken before a resize) starts a new one: the next
/// checkpoint is full (a delta's shard files hold the rows each shard holds now).
void continue_chain(chief_state& st, const loaded_checkpoint& restored) {
  const bool ours = !restored.dir.empty() && !restored.manifest_sha256.empty()
                    && restored.clock > 0
                    && std::filesystem::path(restored.dir).parent_path().lexically_normal()
                         == std::filesystem::path(st.cfg.checkpoints.dir).lexically_normal();
  if (!ours) return;
  auto run = decode_run_checkpoint(restored.run_bytes);  // verified when it was loaded
  if (!run || needs_resize(run->spec, st.cfg.spec)) {
    st.chain = {};
    st.chain_deltas = 0;
    return;
  }
  auto clock = restored.clock;
  if (restored.link.base_clock >= 0) {
    st.chain = {restored.link.base_clock, restored.link.base_sha256, clock,
                restored.manifest_sha256};
    st.chain_deltas = static_cast<int>(restored.chain.size()) - 1;
  } else {
    st.chain = {clock, restored.manifest_sha256, clock, restored.manifest_sha256};
    st.chain_deltas = 0;
  }
}

/// Every shard is present: a rollback episode (rollback_episode.cpp) loads the newest checkpoint
/// and restores every shard from it; on its answer the roles restart at that clock.
void restore_every_shard(self_ptr self) {
  auto& st = self->state;
  abort_rollback_episode(self);  // (none runs: every shard was present only now)
  if (st.restoring_replaced) return;  // once the stopped one is down (rollback_episode_down)
  rollback_plan plan;
  plan.io = st.io;
  plan.dir = st.cfg.checkpoints.dir;
  if (const auto& resumed = st.cfg.checkpoints.resume)
    plan.resumed = std::make_shared<const loaded_checkpoint>(*resumed);
  else if (const auto& start = st.cfg.checkpoints.init_from)
    plan.init_from = std::make_shared<const loaded_checkpoint>(*start);
  plan.spec = st.cfg.spec;
  plan.shards = st.shards;
  plan.incarnations = st.incarnation;
  plan.request_timeout = st.cfg.request_timeout;
  plan.failed_at = st.rollback.failed_at;
  auto episode = st.restoring = spawn_rollback_episode(
    self->system(), caf::actor_cast<caf::actor>(self), std::move(plan));
  self->request(episode, caf::infinite, restore_atom::value)
    .then(
      [=](loaded_checkpoint& restored) {
        auto& st = self->state;
        if (st.restoring != episode) return;  // aborted: the rollback starts over, or the end
        st.restoring = nullptr;
        if (!st.plans.empty() && restored.clock < st.plans_from)  // its checkpoint failed
          return fail_run(self, "going back to the checkpoint of clock "
                                  + std::to_string(restored.clock),
                          make_error(errc::checkpoint_failed,
                                     "it is from before the change of workers at clock "
                                       + std::to_string(st.plans_from)
                                       + "; --resume goes on from it with the same command"));
        continue_chain(st, restored);
        restart_roles(self, restored.clock);
      },
      [=](caf::error& err) {
        auto& st = self->state;
        if (st.restoring != episode) return;
        st.restoring = nullptr;
        // A shard that went down before its reply: its down message starts the rollback over.
        // (The episode itself lost is another error: the run fails rather than wait.)
        if (is_error(err, errc::shard_lost)) {
          log_line("chief", "a shard was lost while restoring (" + describe(err)
                              + "); the rollback starts over once it is back");
          return;
        }
        fail_run(self, "restoring the shards failed", err);
      });
}

void wait_for_shards(self_ptr self) {
  auto& st = self->state;
  auto missing = missing_shards(st);
  if (!st.cfg.remote) {
    for (auto s : missing) spawn_local_shard(self, s);
    restore_every_shard(self);
    return;
  }
  log_line("chief", "waiting for " + role_names(missing) + " to come back");
  self->delayed_send(self, st.cfg.remote->join_timeout, rejoin_due_atom::value, st.rollbacks);
}

/// Why losing a shard now ends the run, or null when the run can go back to a checkpoint.
const char* why_no_rollback(const chief_state& st) {
  switch (st.phase) {
    case run_phase::waiting:
    case run_phase::placing: return " before training began";
    case run_phase::finishing:  // the final checkpoint, evaluation or export lost a shard: the
                                // run goes back like in training and finishes again from there
    case run_phase::training:
    case run_phase::rolling_back:  // it starts over
    case run_phase::stopping: break;
    case run_phase::resizing:  // in one process: a shard the resize spawned is given its part
                               // again (resize_shard_lost), any other goes back like in training
      if (st.cfg.remote) return " while the shards were being resized";
      break;
  }
  // a signal is stopping the run (every task may be getting it too): nothing to go back for
  if (st.interrupts > 0) return " while the run was stopping on a signal";
  return st.cfg.checkpoints.dir.empty() ? " and there is no --checkpoint-dir to restore it from"
                                        : nullptr;
}

} // namespace

void stop_roles(self_ptr self, bool keep_workers) {
  auto& st = self->state;
  // every worker restarts under a new incarnation: the shards refuse a push still in flight
  // from before, and a replacement under way gives up
  for (auto& inc : st.incarnation) inc = st.next_incarnation++;
  st.replacing.clear();
  st.parked.clear();
  if (st.checkpoint_in_flight) {  // its shard may never answer; the next one starts afresh
    ++st.checkpoint_generation;
    st.checkpoint_in_flight = false;
    log_line("chief", "the checkpoint in flight is abandoned");
  }
  auto stop = [&](auto& handle) {
    if (!handle) return;
    self->demonitor(handle.address());
    self->send_exit(handle, caf::exit_reason::kill);
    handle = nullptr;
  };
  if (!keep_workers)
    for (auto& w : st.workers) stop(w);
  stop(st.evaluator);
  abandon_eval(self);
}

void abort_rollback_episode(self_ptr self) {
  auto& st = self->state;
  if (auto episode = std::exchange(st.restoring, nullptr)) {
    st.restoring_replaced = episode.address();
    self->monitor(episode);
    self->send_exit(episode, caf::exit_reason::kill);
  }
}

bool rollback_episode_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  if (!st.restoring_replaced || dm.source != st.restoring_replaced) return false;
  st.restoring_replaced = nullptr;
  if (st.phase == run_phase::rolling_back && missing_shards(st).empty()) restore_every_shard(self);
  return true;
}

void begin_rollback(self_ptr self, int32_t s, const caf::down_msg& dm) {
  auto& st = self->state;
  if (resize_can_replace(st, s)) return resize_shard_lost(self, s, dm);
  if (auto why = why_no_rollback(st))
    return fail_run(self, "parameter shard " + std::to_string(s) + " lost" + why,
                    dm.reason ? dm.reason : caf::make_error(caf::sec::runtime_error));
  bool again = st.phase == run_phase::rolling_back;
  record_failure(self, ps_role(s), loss_reason(st, ps_role(s), dm.reason),
                 again ? "the rollback starts over once it is back"
                       : "going back to the newest checkpoint");
  if (!again) {  // a rollback that starts over keeps the first loss's clock and time
    enter(self, run_phase::rolling_back);
    st.rollback = {s, st.global_clock(), std::chrono::steady_clock::now()};
  }
  ++st.rollbacks;
  ++st.finishing_attempt;  // a final state being collected: its answers are ignored, it restarts
  abort_rollback_episode(self);  // a restore under way: it starts over once every shard is back
  abort_failovers(self);   // the checkpoint's state replaces what they were handing over
  abort_resize(self);      // the state it asked for is being replaced; asked again after
  drop_standbys(self);     // they hold the state being replaced; built again when it resumes
  st.shards[s] = nullptr;  // filled again when it is back
  stop_roles(self);
  wait_for_shards(self);
}

void on_rejoined_shard(self_ptr self, int32_t) {
  if (missing_shards(self->state).empty()) restore_every_shard(self);
}

void on_rejoin_due(self_ptr self, uint64_t rollback) {
  auto& st = self->state;
  auto missing = missing_shards(st);
  if (rollback != st.rollbacks || missing.empty()) return;  // an older wait, or all are back
  std::string where;
  for (auto s : missing)
    where += (where.empty() ? "" : ", ") + ps_role(s).text() + " at " + st.cfg.remote->ps[s].text();
  // As a task that never joined at the start: a restart of the whole run (--resume from the
  // checkpoint this rollback was going back to) may find it, so the code says retryable.
  fail_run(self, role_names(missing) + " did not come back",
           make_error(errc::peer_unreachable, "no process joined as " + where + " in time"));
}

} // namespace actorps::chief_detail
