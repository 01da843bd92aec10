// The chief's run, phase by phase. Each phase is a behaviour (become()) that accepts the whole
// chief_actor interface; what a message does depends on the phase it finds. A request a phase
// has no use for is answered with an error saying why; any other message is dropped, the reason
// beside its handler.
//
//   waiting
//      | (run)
//      v
//   placing
//      | (every role started)
//      v
//   training --------(a shard lost)-------> rolling_back
//      |     <--(every shard restored,           |
//      |         every role restarted)-----------+
//      |
//      +--(every shard's state at a --resize or scale clock)--> resizing
//      |     <--(the shards of the new size restored,          |
//      |         every role restarted)-------------------------+
//      | (every live worker done)
//      v
//   finishing
//      | (summary delivered)
//      v
//   stopping <-------(the run fails, in any phase)
//      | (every task down, or stop_due)
//      v
//   (quit)
//
//   waiting       before (run): tasks that join are kept
//   placing       the shards are spawned (simulate) or every task joins (by join_due), the shards
//                 are initialised (or restored: --resume), the workers and the evaluator started
//   training      reports, evaluations, checkpoints, kills; a lost worker is replaced, a lost
//                 evaluator respawned (recovery.cpp); a lost primary with a ready standby
//                 fails over: an episode actor of its own (failover.cpp) runs meanwhile, and
//                 training does not end before its report (chief_state::failing_over)
//   rolling_back  a shard was lost: every shard goes back to the newest checkpoint, every role
//                 restarts there (rollback.cpp); reports from before are dropped
//   resizing      the shards' states at a --resize clock (or one actorps scale asked for:
//                 scale_request.cpp) are cut for the new number of shards, every role restarts
//                 there (resize.cpp); reports from before are dropped
//   finishing     the final checkpoint (none when every worker was lost short of the last
//                 clock), the final evaluation, the summary (summary.cpp)
//   stopping      every other role is told to stop; distributed: the chief waits for each
//                 task's down message (by stop_due) so that none sees a lost chief instead
#include "actors/chief/cluster_view.hpp"
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"
#include "actors/roles/authorisation.hpp"

namespace actorps::chief_detail {

namespace {

using behavior = chief_actor::behavior_type;

// -- handlers several phases share ---------------------------------------------------------

/// Whether the message being handled is refused by role (authorisation.hpp): counted and logged.
/// `err` when a message was refused: logged, and counted among the run's refusals (summary).
caf::error chief_refusal(self_ptr self, caf::error err) {
  if (err) ++self->state.refused_here;
  return note_refusal("chief", std::move(err));
}

bool refused(self_ptr self, caf::error err) {
  return static_cast<bool>(chief_refusal(self, std::move(err)));
}

/// A worker's reports of its clocks, in order. Each may change the phase (a kill injected at a
/// clock starts a rollback, the last clock the finish), so each is taken as the phase it finds
/// says: counted and acted on while training, only counted while finishing, ignored otherwise
/// (from before the checkpoint the run goes back to).
void take_reports(self_ptr self, const std::vector<train_report>& reports) {
  for (const auto& r : reports) {
    if (refused(self, authorise_worker(current_role(self), r.worker, "train report"))) continue;
    if (r.worker >= 0 && r.worker < self->state.cfg.spec.workers)
      self->state.note_reported_refusals(worker_role(r.worker), r.refused);
    switch (self->state.phase) {
      case run_phase::training: on_train_report(self, r); break;
      case run_phase::finishing: record_train_report(self, r); break;
      case run_phase::waiting:  // no worker runs yet
      case run_phase::placing:
      case run_phase::rolling_back:  // from before the checkpoint: undone
      case run_phase::resizing:      // from past the clock of the change: undone
      case run_phase::stopping: break;
    }
  }
}

/// Whether the message being handled came from outside this process (timers, kill, interrupt).
bool not_local(self_ptr self, const char* what) {
  return refused(self, authorise_local(current_role(self), what));
}

auto refuse_run(const char* why) {
  return [why](run_atom) -> caf::result<run_summary> {
    return caf::make_error(caf::sec::runtime_error, why);
  };
}

/// A joining task's cluster view against the chief's (remote_tasks::cluster_view): a task
/// started with another spec is refused, naming the first difference, and exits 2 (a restart
/// with the same spec would be refused again). A ps task's may list more ps tasks after the
/// chief's: the run may have grown onto them (spare_tasks.cpp).
caf::error check_cluster_view(self_ptr self, const std::string& task, const std::string& view,
                              bool growing = false) {
  const auto& remote = self->state.cfg.remote;
  if (!remote || remote->cluster_view.empty()) return {};
  auto difference = growing ? cluster_view_difference_growing(view, remote->cluster_view)
                            : cluster_view_difference(view, remote->cluster_view);
  if (difference.empty()) return {};
  log_line(log_level::error, "chief", "refused " + task + "'s join: its cluster spec is not the "
                                        "chief's: " + difference);
  return make_error(errc::cluster_mismatch, task + "'s cluster spec is not the chief's: "
                                              + difference);
}

/// (join, ps index, shard, task, view): the shard takes its slot ("ps:0" + `said` is logged), then
/// `seated(index)`.
template <class Seated>
auto join_shard(self_ptr self, const char* said, Seated seated) {
  return [=](join_atom, int32_t index, ps_shard_actor shard, ps_task_actor task,
             std::string view) -> caf::result<caf::ok_atom> {
    if (auto err = chief_refusal(self, authorise_task(current_role(self), "ps", index,
                                                        "join as ps:" + std::to_string(index))))
      return err;
    // A ps task beyond the run's shards waits as a spare for a growth (actorps scale).
    if (is_spare_join(self, index)) {
      if (auto err = seat_spare(self, index, std::move(shard), std::move(task), view)) return err;
      return caf::ok_atom::value;
    }
    if (auto err = check_cluster_view(self, "ps:" + std::to_string(index), view, true))
      return err;
    // With standbys, a new process of a task whose shard is served elsewhere since a fail-over
    // (placement.cpp): it hosts standbys from now on.
    if (rejoin_as_standby_host(self, index, shard, task)) return caf::ok_atom::value;
    // A restarted process of a task whose previous one is not known lost yet: lost now, and
    // the join goes to the phase that loss leads to (a rollback, say).
    if (supersede_shard(self, index, shard))
      return self->delegate(caf::actor_cast<chief_actor>(self), join_atom::value, index,
                            std::move(shard), std::move(task), std::move(view));
    self->state.leaving.erase(ps_role(index));  // a leave of its previous process is told
    if (auto err = seat_shard(self, index, std::move(shard), std::move(task))) return err;
    log_line("chief", ps_role(index).text() + said);
    seated(index);
    return caf::ok_atom::value;
  };
}

/// (join, type, index, node, view): a worker's or the evaluator's node takes its slot, then
/// `seated(role)`.
template <class Seated>
auto join_node(self_ptr self, const char* said, Seated seated) {
  return [=](join_atom, const std::string& type, int32_t index, task_node_actor node,
             std::string view) -> caf::result<caf::ok_atom> {
    if (auto err = chief_refusal(self, authorise_task(current_role(self), type, index,
                                                        "join as " + type + ":"
                                                          + std::to_string(index))))
      return err;
    // A worker task beyond the run's workers waits as a spare for a growth (actorps scale).
    if (is_spare_worker_join(self, type, index)) {
      if (auto err = seat_spare_worker(self, index, std::move(node), view)) return err;
      return caf::ok_atom::value;
    }
    if (auto err = check_cluster_view(self, type + ":" + std::to_string(index), view)) return err;
    if (supersede_node(self, type, index, node))  // as for a shard, above
      return self->delegate(caf::actor_cast<chief_actor>(self), join_atom::value, type, index,
                            std::move(node), std::move(view));
    auto role = seat_node(self, type, index, std::move(node));
    if (!role) return role.error();
    self->state.leaving.erase(*role);  // a leave of its previous process is told
    log_line("chief", role->text() + said);
    seated(*role);
    return caf::ok_atom::value;
  };
}

auto kills(self_ptr self) {
  return [=](kill_atom, int32_t i) {
    if (!not_local(self, "kill")) run_kill(self, i);
  };
}

auto interrupts(self_ptr self) {
  return [=](interrupt_atom, const std::string& signal) {
    if (!not_local(self, "interrupt")) on_interrupt(self, signal);
  };
}

/// (stream, names, numbers): files that appeared in the followed directory (follow.cpp).
auto streams(self_ptr self) {
  return [=](stream_atom, const std::vector<std::string>& names,
             const std::vector<int64_t>& numbers) {
    if (!not_local(self, "stream")) on_stream_grew(self, names, numbers);
  };
}

/// (leave, type, index, why) -> ok: the task of that role is about to exit on its own; only
/// that task may say so.
auto leaves(self_ptr self) {
  return [=](leave_atom, const std::string& type, int32_t index,
             const std::string& why) -> caf::result<caf::ok_atom> {
    auto role = type + ":" + std::to_string(index);
    if (auto err = chief_refusal(self, authorise_task(current_role(self), type, index,
                                                        "leave as " + role)))
      return err;
    auto kind = role_kind_named(type);
    if (!kind || index < 0 || why.size() > 64)
      return caf::make_error(caf::sec::invalid_argument, "no such task to leave: " + role);
    note_leaving(self, role_id{*kind, index}, why);
    return caf::ok_atom::value;
  };
}

/// (scale, shards, workers) -> (shards, workers): actorps scale, from chief:0 or admin:0
/// (scale_request.cpp).
auto scales(self_ptr self) {
  return [=](scale_atom, int32_t shards, int32_t workers) -> caf::result<int32_t, int32_t> {
    if (auto err = chief_refusal(self, authorise_admin(current_role(self), "scale to "
                                                         + std::to_string(shards) + " shards, "
                                                         + std::to_string(workers) + " workers")))
      return err;
    return on_scale_request(self, shards, workers);
  };
}

/// (failover, done|failed): a fail-over episode's report (standbys.cpp), from this process only.
auto failover_done_reports(self_ptr self) {
  return [=](failover_atom, const failover_done& report) {
    if (!not_local(self, "failover")) on_failover_done(self, report);
  };
}

auto failover_failed_reports(self_ptr self) {
  return [=](failover_atom, const failover_failed& report) {
    if (!not_local(self, "failover")) on_failover_failed(self, report);
  };
}

caf::result<run_summary> start_run(self_ptr self);

// -- the phases ----------------------------------------------------------------------------

behavior waiting(self_ptr self) {
  return {
    [=](run_atom) -> caf::result<run_summary> {
      if (auto err = chief_refusal(self, authorise_local(current_role(self), "run"))) return err;
      return start_run(self);
    },
    [](train_atom, const std::vector<train_report>&) {},  // no worker runs yet
    [](done_atom, int32_t) {},               // no worker runs yet
    join_shard(self, " joined", [](int32_t) {}),  // placing counts it
    join_node(self, " joined", [](role_id) {}),
    [](join_due_atom) {},              // (run) sets it
    [](rejoin_due_atom, uint64_t) {},  // a rollback sets it
    [](worker_due_atom, int32_t, int64_t) {},  // a wait that is over
    [](stop_due_atom) {},              // stopping sets it
    [](kill_atom, int32_t) {},         // due only once training has begun
    interrupts(self),
    streams(self),
    leaves(self),
    scales(self),
    [](failover_atom, const failover_done&) {},    // none before training
    [](failover_atom, const failover_failed&) {},
  };
}

behavior placing(self_ptr self) {
  return {
    refuse_run("already running"),
    [](train_atom, const std::vector<train_report>&) {},  // the workers have not started
    [](done_atom, int32_t) {},
    join_shard(self, " joined",
               [=](int32_t index) { on_joined_while_placing(self, ps_role(index)); }),
    join_node(self, " joined", [=](role_id role) { on_joined_while_placing(self, role); }),
    [=](join_due_atom) {
      if (!not_local(self, "join_due")) on_join_due(self);
    },
    [](rejoin_due_atom, uint64_t) {},  // a rollback sets it
    [](worker_due_atom, int32_t, int64_t) {},  // a wait that is over
    [](stop_due_atom) {},              // stopping sets it
    [](kill_atom, int32_t) {},         // due only once training has begun
    interrupts(self),
    streams(self),
    leaves(self),
    scales(self),
    [](failover_atom, const failover_done&) {},    // none before training
    [](failover_atom, const failover_failed&) {},
  };
}

behavior training(self_ptr self) {
  return {
    refuse_run("already running"),
    [=](train_atom, const std::vector<train_report>& reports) { take_reports(self, reports); },
    [=](done_atom, int32_t worker) {
      if (!refused(self, authorise_worker(current_role(self), worker, "done")))
        on_worker_done(self, worker);
    },
    // every shard is in its slot while training: a new process of one is a loss (supersede)
    join_shard(self, " is back", [](int32_t) {}),
    join_node(self, " is back", [=](role_id role) { on_rejoined_node(self, role); }),
    [](join_due_atom) {},              // every task joined before training began
    [](rejoin_due_atom, uint64_t) {},  // the wait of a rollback that is over
    [=](worker_due_atom, int32_t w, int64_t since) {
      if (!not_local(self, "worker_due")) on_worker_due(self, w, since);
    },
    [](stop_due_atom) {},              // stopping sets it
    kills(self),
    interrupts(self),
    streams(self),
    leaves(self),
    scales(self),
    failover_done_reports(self),  // a fail-over under way has ended
    failover_failed_reports(self),
  };
}

behavior rolling_back(self_ptr self) {
  return {
    refuse_run("already running"),
    [](train_atom, const std::vector<train_report>&) {},  // from before the checkpoint: undone
    [](done_atom, int32_t) {},               // likewise
    join_shard(self, " is back", [=](int32_t index) { on_rejoined_shard(self, index); }),
    // the rollback starts the workers whose processes are there, and hands the processes that
    // come back later over to training when it resumes
    join_node(self, " is back", [](role_id) {}),
    [](join_due_atom) {},  // every task joined before training began
    [=](rejoin_due_atom, uint64_t rollback) {
      if (!not_local(self, "rejoin_due")) on_rejoin_due(self, rollback);
    },
    [](worker_due_atom, int32_t, int64_t) {},  // a wait that is over
    [](stop_due_atom) {},  // stopping sets it
    kills(self),
    interrupts(self),
    streams(self),
    leaves(self),
    scales(self),
    [](failover_atom, const failover_done&) {},    // aborted by the rollback
    [](failover_atom, const failover_failed&) {},
  };
}

behavior resizing(self_ptr self) {
  return {
    refuse_run("already running"),
    [](train_atom, const std::vector<train_report>&) {},  // from past the change's clock: undone
    [](done_atom, int32_t) {},               // likewise
    join_shard(self, " is back", [](int32_t) {}),  // one process: nothing joins
    join_node(self, " is back", [](role_id) {}),
    [](join_due_atom) {},
    [](rejoin_due_atom, uint64_t) {},
    [](worker_due_atom, int32_t, int64_t) {},
    [](stop_due_atom) {},  // stopping sets it
    kills(self),
    interrupts(self),
    streams(self),
    leaves(self),
    scales(self),
    [](failover_atom, const failover_done&) {},    // none: no standbys with --resize
    [](failover_atom, const failover_failed&) {},
  };
}

behavior finishing(self_ptr self) {
  return {
    refuse_run("already running"),
    // a report still on its way counts; it starts nothing
    [=](train_atom, const std::vector<train_report>& reports) { take_reports(self, reports); },
    [](done_atom, int32_t) {},  // every live worker is done already
    join_shard(self, " is back", [](int32_t) {}),  // training is over: nothing to take over
    join_node(self, " is back", [](role_id) {}),
    [](join_due_atom) {},              // every task joined before training began
    [](rejoin_due_atom, uint64_t) {},  // the wait of a rollback that is over
    [](worker_due_atom, int32_t, int64_t) {},  // a wait that is over
    [](stop_due_atom) {},              // stopping sets it
    kills(self),
    interrupts(self),
    streams(self),
    leaves(self),
    scales(self),
    failover_done_reports(self),  // a fail-over under way has ended
    failover_failed_reports(self),
  };
}

behavior stopping(self_ptr self) {
  const char* over = "this run is over";
  // A task (restarted) joining now is told what every task is told: the stop reason, so that
  // it exits as they do (deployment.cpp).
  return {
    refuse_run(over),
    [](train_atom, const std::vector<train_report>&) {},  // the run is over: nothing counts
    [](done_atom, int32_t) {},
    [=](join_atom, int32_t, const ps_shard_actor&, const ps_task_actor&,
        const std::string&) -> caf::result<caf::ok_atom> {
      return self->state.stop_reason;
    },
    [=](join_atom, const std::string&, int32_t, const task_node_actor&,
        const std::string&) -> caf::result<caf::ok_atom> {
      return self->state.stop_reason;
    },
    [](join_due_atom) {},
    [](rejoin_due_atom, uint64_t) {},
    [](worker_due_atom, int32_t, int64_t) {},  // a wait that is over
    [=](stop_due_atom) {  // some task never said it stopped
      if (!not_local(self, "stop_due")) self->quit();
    },
    [](kill_atom, int32_t) {},
    [](interrupt_atom, const std::string&) {},  // stopping already
    [](stream_atom, const std::vector<std::string>&, const std::vector<int64_t>&) {},
    leaves(self),
    scales(self),
    [](failover_atom, const failover_done&) {},    // aborted by the run's end
    [](failover_atom, const failover_failed&) {},
  };
}

// -- the transitions -----------------------------------------------------------------------

/// waiting -> placing.
caf::result<run_summary> start_run(self_ptr self) {
  auto& st = self->state;
  st.run_promise = self->make_response_promise<run_summary>();
  if (auto why = resize_refusal(st.cfg); !why.empty()) {
    fail_run(self, "--resize", caf::make_error(caf::sec::invalid_argument, why));
    return st.run_promise;
  }
  const auto& spec = st.cfg.spec;
  // A followed stream without --steps knows no number of clocks: it runs until stopped.
  auto clocks = st.cfg.steps >= endless_clocks ? nlohmann::ordered_json()
                                               : nlohmann::ordered_json(st.cfg.steps);
  auto start = json_object()
                 .add("event", "start")
                 .add("mode", to_string(spec.mode))
                 .add("staleness_bound", spec.staleness_bound())
                 .add("workers", spec.workers)
                 .add("shards", spec.shards)
                 .add("model", spec.model.name)
                 .add("optimizer", to_string(spec.optimizer.kind))
                 .add("learning_rate", double(spec.optimizer.learning_rate))
                 .add("lr_schedule", to_string(spec.schedule))
                 .add("batch", st.cfg.batch)
                 .add("clocks", clocks)
                 .add("seed", static_cast<int64_t>(spec.seed));
  if (const auto& settings = st.cfg.settings; !settings.model.empty()) {
    const bool followed = st.cfg.source.follow;  // read until stopped: no epochs
    log_line("chief", "settings: " + describe(settings, spec.model, followed));
    start.add("momentum", double(spec.optimizer.momentum))
      .add("epochs", followed ? 0.0 : settings.values.epochs);
    if (!spec.model.sparse_tables.empty()) {  // set alike on every table
      const auto& table = spec.model.sparse_tables.front().config;
      start.add("table_optimizer", to_string(table.optimizer.kind))
        .add("table_learning_rate", double(table.optimizer.learning_rate))
        .add("admit_after", static_cast<int64_t>(table.admit_after))
        .add("evict_after", static_cast<int64_t>(table.evict_after))
        .add("max_rows_per_shard", static_cast<uint64_t>(table.max_rows))
        .add("admission_memory", static_cast<uint64_t>(table.admission_memory));
    }
    start.add("settings_given", settings.given);  // the rest are the model's defaults
  }
  st.metrics->write(start);
  enter(self, run_phase::placing);
  place_roles(self);
  return st.run_promise;
}

/// stopping: a task told to stop has gone; once every one has, the chief quits.
void on_task_stopped(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  if (st.stopping_tasks.erase(dm.source) > 0 && st.stopping_tasks.empty()) self->quit();
}

} // namespace

chief_actor::behavior_type phase_behavior(self_ptr self, run_phase p) {
  switch (p) {
    case run_phase::waiting: return waiting(self);
    case run_phase::placing: return placing(self);
    case run_phase::training: return training(self);
    case run_phase::rolling_back: return rolling_back(self);
    case run_phase::resizing: return resizing(self);
    case run_phase::finishing: return finishing(self);
    case run_phase::stopping: break;
  }
  return stopping(self);
}

void enter(self_ptr self, run_phase next) {
  self->state.phase = next;
  self->become(phase_behavior(self, next));
}

void begin_training(self_ptr self) {
  auto& st = self->state;
  if (st.phase != run_phase::placing) return;  // the run failed meanwhile
  enter(self, run_phase::training);
  auto every = st.cfg.eval_every;
  st.next_eval = every > 0 ? (st.start_clock / every + 1) * every : 0;
  st.start = std::chrono::steady_clock::now();
  maybe_export(self);  // asked before the workers start: no shard is past it yet
  build_missing_standbys(self, false);
  for (auto& w : st.workers)
    if (w) self->send(w, start_atom::value);
  start_following(self);
  schedule_timed_kills(self);
  arm_next_resize(self);
  start_late_evaluator(self);  // joined from outside the cluster while the roles started
  // Workers whose process was lost while the roles started: one that is back takes over now,
  // one still missing gets its --connect-timeout again (its wait's end was ignored meanwhile).
  auto back = st.awaiting_rejoin;
  for (const auto& [role, since] : back)
    if (role.kind != role_kind::worker)
      continue;
    else if (st.worker_nodes[role.index])
      on_rejoined_node(self, role);
    else
      self->delayed_send(self, st.cfg.remote->join_timeout, worker_due_atom::value, role.index,
                         static_cast<int64_t>(since.time_since_epoch().count()));
}

void finish_training(self_ptr self) {
  auto& st = self->state;
  enter(self, run_phase::finishing);
  st.end = std::chrono::steady_clock::now();
  if (std::none_of(st.live.begin(), st.live.end(), [](bool live) { return live; })) {
    // Every worker was lost short of the last clock, none left to replace or wait for. The
    // shards never reach that clock, so there is no final checkpoint (it would wait out the
    // request timeout); the newest one stays for --resume. The run ends with what it trained,
    // and every task is stopped as for a peer lost past its timeout: each exits retryable, as
    // the chief does (a restart trains the rest).
    st.workers_lost = true;
    auto why = "every worker was lost; the run trained " + std::to_string(st.trained_clocks())
               + " of its " + std::to_string(st.cfg.steps) + " clocks";
    log_line(log_level::error, "chief", why);
    st.metrics->write(json_object().add("event", "workers_lost")
                        .add("clock", st.trained_clocks()).add("wall_s", st.elapsed()));
    if (st.stop_reason == caf::exit_reason::user_shutdown)
      st.stop_reason = make_error(errc::peer_unreachable, why);
    if (st.checkpoint_in_flight) {
      // A scheduled one is of a clock the shards had reached when it was asked for: it ends
      // soon and may be the newest --resume finds. One asked for ahead (a stop request's) would
      // wait for a clock no worker is left to train.
      if (st.interrupts == 0) {
        st.after_checkpoint = [=] { evaluate_final(self); };
        return;
      }
      abandon_checkpoint(self, "no worker is left to reach its clock");
    }
    return evaluate_final(self);
  }
  final_checkpoint(self, [=] { evaluate_final(self); });
}

void stop_run(self_ptr self) {
  auto& st = self->state;
  enter(self, run_phase::stopping);
  self->set_down_handler([=](caf::down_msg& dm) { on_task_stopped(self, dm); });
  abort_failovers(self);
  abort_rollback_episode(self);
  abort_resize(self);
  st.progress->finish();
  st.metrics->flush();
  auto stop = [&](const auto& handle) {  // with why: a task exits by it (deployment.hpp)
    if (handle) self->send_exit(handle, st.stop_reason);
  };
  for (auto& w : st.workers) stop(w);
  stop(st.evaluator);
  for (auto& n : st.worker_nodes) stop(n);
  stop(st.evaluator_node);
  for (auto& s : st.shards) stop(s);
  for (auto& s : st.standbys) stop(s);
  for (auto& s : st.idle_shards) stop(s);  // a ps process back as a host of standbys ends with it
  for (auto& [index, spare] : st.spares) stop(spare.shard);  // a spare's process ends with it
  for (auto& [index, spare] : st.spare_workers) stop(spare.node);
  refuse_scale_request(self, "the run ended before the change");
  stop(st.io);
  if (st.cfg.remote) {
    // Stay until every task process has stopped (its down message): quitting at once could end
    // this process before the stop orders reach the sockets, and the tasks would then see a
    // lost chief instead of an orderly end. Bounded, in case a task is already gone.
    // Monitored again: a task whose process is gone already (its down message came and went)
    // answers with another down message at once instead of holding the chief until stop_due.
    auto remember = [&](const auto& handle) {
      if (!handle) return;
      st.stopping_tasks.insert(handle.address());
      self->monitor(handle);
    };
    for (auto& n : st.worker_nodes) remember(n);
    remember(st.evaluator_node);
    for (auto& s : st.shards) remember(s);
    for (auto& s : st.idle_shards) remember(s);
    for (auto& [index, spare] : st.spares) remember(spare.shard);
    for (auto& [index, spare] : st.spare_workers) remember(spare.node);
    if (!st.stopping_tasks.empty()) {
      self->delayed_send(self, std::chrono::seconds(10), stop_due_atom::value);
      return;
    }
  }
  self->quit();
}

void fail_run(self_ptr self, const std::string& what, const caf::error& err) {
  auto& st = self->state;
  if (st.phase == run_phase::stopping) return;
  auto sentence = what + ": " + describe(err);
  log_line(log_level::error, "chief", sentence);
  st.progress->finish();  // before the caller, woken by the failure, says it
  // An interrupted run, or one a task never joined, is one a restart may complete: the code
  // stays, so the process can exit saying so (deploy/exit_codes.hpp).
  auto kept = is_error(err, errc::run_interrupted) || is_error(err, errc::peer_unreachable);
  auto failure = kept ? make_error(static_cast<errc>(err.code()), sentence)
                      : caf::make_error(caf::sec::runtime_error, sentence);
  // Every task exits by the reason it is stopped with (deploy/deployment.hpp), so it must not
  // be the orderly default: a task would exit 0, which an orchestrator takes for a completed
  // run and never restarts. A signalled chief exits as interrupted whatever failed (a signal
  // to every process takes its shards down under it), and its tasks with it.
  if (st.stop_reason == caf::exit_reason::user_shutdown)
    st.stop_reason = st.interrupts > 0 ? make_error(errc::run_interrupted, sentence) : failure;
  st.run_promise.deliver(std::move(failure));
  stop_run(self);
}

} // namespace actorps::chief_detail
