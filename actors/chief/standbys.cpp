// Hot standbys (--replicas 1; actors/roles/replication.hpp says how a shard and its standby stay
// identical). The chief's part:
//
//   build_standby     spawns shard s's standby and tells the primary (backup); the standby is
//                     ready once the primary answers (it holds the state). At the start of
//                     training, after a rollback, and after every fail-over or lost standby
//                     (a "rereplicated" event then), while training continues.
//   fail_over         a lost primary whose standby is ready: the standby takes its slot, and a
//                     fail-over episode, an actor of its own (failover.cpp draws its steps),
//                     promotes it and has every worker send its request in flight to it again
//                     (reroute). On its report (done): a "failover" event says how long it
//                     took and what was re-sent, a new standby is built, the evaluator is
//                     restarted on the new shard list. Nothing goes back to a checkpoint. On
//                     failed: the promoted standby is stopped, and its loss rolls back.
//   a standby lost    dropped and built again; the primary serves meanwhile (unprotected).
//
// A primary lost without a ready standby (both copies gone, or the first one not built yet)
// goes to the checkpoint rollback (rollback.cpp), which drops every standby and builds them
// again once training resumes.
//
// Where a standby lives: in simulate, a shard actor of this process; one process per task, a
// shard spawned by the ps task after the one serving the primary, (p+1) mod P (P >= 2, checked
// by the command line): ps:i's standby lives in ps:(i+1) mod P, and after a fail-over the shard
// served by ps:p gets its next standby in ps:(p+1) mod P; a task that is lost is skipped for
// the next live one (none left but the primary's: the shard goes on unprotected).
#include "actors/chief/state.hpp"

#include "actors/roles/ps_shard.hpp"
#include "actors/protocol/log.hpp"

namespace actorps::chief_detail {

namespace {

using time_point = std::chrono::steady_clock::time_point;

std::string standby_name(int32_t s) { return ps_role(s).text() + "'s standby"; }

void fit_standby_slots(chief_state& st) {
  st.standbys.resize(st.shards.size());
  st.standby_ready.resize(st.shards.size(), false);
  st.standby_host.resize(st.shards.size(), -1);
  st.spawning_standby.resize(st.shards.size(), false);
}

/// The first ps task after `primary` (in the order (primary+1) mod P, (primary+2) mod P, ...)
/// whose process is not lost, or -1: a shard whose standby's task was lost is protected again
/// in another one while any is left.
int32_t next_live_task(const chief_state& st, int32_t primary) {
  auto tasks = static_cast<int32_t>(st.ps_tasks.size());
  for (int32_t k = 1; k < tasks; ++k)
    if (auto host = (primary + k) % tasks; st.ps_tasks[host]) return host;
  return -1;
}

/// Spawns shard s's standby (here, or in the next ps task of a distributed run) and calls
/// `spawned` with it, or `failed` with why not.
void spawn_standby(self_ptr self, int32_t s, std::function<void(ps_shard_actor)> spawned,
                   std::function<void(caf::error)> failed) {
  auto& st = self->state;
  if (!st.cfg.remote) {
    st.standby_host[s] = -1;
    return spawned(spawn_ps_shard(self->system(), s, {st.cfg.checkpoints.dir, st.cfg.bounds}));
  }
  auto primary = s < static_cast<int32_t>(st.primary_host.size()) ? st.primary_host[s] : s;
  auto host = next_live_task(st, primary);
  if (host < 0) return failed(make_error(errc::shard_lost, "no other ps task to hold it"));
  st.standby_host[s] = host;
  auto pair = std::make_pair(std::min(host, primary), std::max(host, primary));
  auto next = [=] {  // the pair's next ask, once this one is answered
    auto& dials = self->state.standby_dials;
    auto i = dials.find(pair);
    if (i == dials.end()) return;
    if (i->second.empty()) return static_cast<void>(dials.erase(i));
    auto ask = std::move(i->second.front());
    i->second.pop_front();
    ask();
  };
  auto ask = [=] {
    auto& task = self->state.ps_tasks[host];
    if (!task) {
      failed(make_error(errc::shard_lost, "ps:" + std::to_string(host) + " is lost"));
      return next();
    }
    // the primary's task's address: a spare taken in is in no other task's cluster spec
    const auto& tasks = self->state.cfg.remote->ps;
    auto address = primary < static_cast<int32_t>(tasks.size()) ? tasks[primary].text() : "";
    self->request(task, self->state.cfg.request_timeout, standby_atom::value, s, primary,
                  std::move(address))
      .then([=](ps_shard_actor standby) { spawned(std::move(standby)); next(); },
            [=](caf::error& err) { failed(std::move(err)); next(); });
  };
  if (auto [i, first] = st.standby_dials.try_emplace(pair); !first)
    return i->second.push_back(ask);
  ask();
}

/// The evaluator holds the shard list it was started with: a new one gets the current list (in
/// another process, its task sets it up again, reaching the promoted shard over CAF:
/// served_elsewhere in placement.cpp).
void restart_evaluator_on_new_shards(self_ptr self, std::function<void()> then = [] {}) {
  auto& st = self->state;
  if (!st.evaluator) return then();
  auto old = st.evaluator;
  st.evaluator = nullptr;  // its down message is not a failure
  self->send_exit(old, caf::exit_reason::kill);
  abandon_eval(self);
  start_evaluator(self, [then](bool) { then(); });
}

/// A fail-over's promoted shard serves and every worker re-sent its request: the evaluator is
/// set up on the new shards; then the fail-over is over and training may end (check_all_done
/// waits for every fail-over, so that the final evaluation reads the promoted shard), or, when
/// the run was finishing, its final steps start over. Nothing once the fail-over was aborted
/// meanwhile (a rollback, the run's end) or the run has left the phase it began in.
void promotion_over(self_ptr self, int32_t s) {
  auto& st = self->state;
  auto run = st.failing_over.find(s);
  if (run == st.failing_over.end()) return;  // aborted meanwhile (the run failed)
  auto episode = run->second.episode;
  const bool finishing = run->second.finishing;
  if (st.phase != (finishing ? run_phase::finishing : run_phase::training)) {
    st.failing_over.erase(s);  // the run stopped early meanwhile (interrupt.cpp)
    return;
  }
  if (finishing)
    log_line("chief", "the final checkpoint, evaluation and state start over on the promoted "
                        + ps_role(s).text());
  restart_evaluator_on_new_shards(self, [=] {
    auto& st = self->state;
    auto i = st.failing_over.find(s);
    if (i == st.failing_over.end() || i->second.episode != episode) return;  // aborted
    st.failing_over.erase(i);
    if (!finishing) {
      arm_next_resize(self);  // (none while another fail-over runs)
      return check_all_done(self);
    }
    if (st.phase == run_phase::finishing) final_checkpoint(self, [=] { evaluate_final(self); });
  });
}

/// The fail-over of shard s under way whose episode sent the message being handled, if any:
/// a report of an aborted episode, or from anybody else, finds none.
chief_state::failover_run* reporting_failover(self_ptr self, int32_t s) {
  auto& st = self->state;
  auto i = st.failing_over.find(s);
  auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
  if (i == st.failing_over.end() || i->second.reported || i->second.episode.address() != sender)
    return nullptr;
  return &i->second;
}

/// A fail-over that failed: the promoted standby is stopped (it may be alive, having refused),
/// and its loss sends the run back to a checkpoint (rollback.cpp), as a primary lost without a
/// ready standby does.
void failover_failed_because(self_ptr self, int32_t s, const ps_shard_actor& promoted,
                             const std::string& why) {
  auto& st = self->state;
  st.failing_over.erase(s);
  log_line("chief", standby_name(s) + " could not take over: " + why);
  if (st.shards[s] == promoted) self->send_exit(promoted, caf::exit_reason::kill);
}

/// A fail-over while the run is finishing: what the final steps asked of the lost primary would
/// never come, so they are dropped (their answers ignored) and start over on the promoted shard
/// once it serves.
void drop_final_steps(self_ptr self) {
  auto& st = self->state;
  ++st.finishing_attempt;                // finish_run's answers
  st.after_checkpoint = nullptr;         // a final checkpoint waiting for a periodic one
  st.after_eval = nullptr;               // a final evaluation waiting for a periodic one
  if (st.eval_in_flight != evaluation::none) {
    ++st.eval_generation;                // its answer is ignored
    st.eval_in_flight = evaluation::none;
  }
}

void write_failover(self_ptr self, int32_t s, double ms, int64_t apart, int32_t resent,
                    int64_t deduplicated) {
  auto& st = self->state;
  char text[200];
  std::snprintf(text, sizeof text,
                "%s serves again after %.1f ms: its standby took over (clocks in flight %lld, "
                "pushes re-sent %d, deduplicated %lld)",
                ps_role(s).text().c_str(), ms, static_cast<long long>(apart), resent,
                static_cast<long long>(deduplicated));
  log_line("chief", text);
  st.metrics->write(json_object().add("event", "failover").add("shard", s).add("ms", ms)
                      .add("clocks_in_flight", apart).add("pushes_resent", resent)
                      .add("pushes_deduplicated", deduplicated)
                      .add("clock", st.global_clock()).add("wall_s", st.elapsed()));
  st.metrics->flush();
}

/// A standby in another process was lost: its ps task with it, and its primary, which may not
/// learn it by itself (the standby was reached through this node), is told (backup, null).
void forget_lost_standby(self_ptr self, int32_t s) {
  auto& st = self->state;
  if (auto host = st.standby_host[s]; host >= 0 && host < static_cast<int32_t>(st.ps_tasks.size()))
    st.ps_tasks[host] = nullptr;
  if (st.shards[s])
    self->request(st.shards[s], st.cfg.request_timeout, backup_atom::value, caf::strong_actor_ptr{})
      .then([](uint64_t) {}, [](caf::error&) {});
}

/// Whether a standby spawned for `primary` in standby epoch `epoch` came too late: the standbys
/// were dropped since (a rollback replaces the state it would copy; drop_standbys), the shard
/// has another primary, or another standby. Logged; the caller stops it.
bool late_standby(const chief_state& st, int32_t s, uint64_t epoch, const ps_shard_actor& primary,
                  const ps_shard_actor& standby) {
  if (epoch == st.standby_epoch && st.shards[s] == primary && !st.standbys[s]) return false;
  log_line("chief", standby_name(s) + " " + caf::to_string(standby.address())
                      + " came after it was no longer wanted; stopped");
  return true;
}

/// Tells shard s's primary that `standby` is its standby: ready once the primary answers.
void back_up(self_ptr self, int32_t s, ps_shard_actor standby, bool rebuilt);

} // namespace

void build_standby(self_ptr self, int32_t s, bool rebuilt) {
  auto& st = self->state;
  if (st.cfg.replicas < 1 || !st.shards[s]) return;
  fit_standby_slots(st);
  if (st.standbys[s] || st.spawning_standby[s]) return;  // one is being built already
  auto primary = st.shards[s];
  auto epoch = st.standby_epoch;
  st.spawning_standby[s] = true;
  spawn_standby(self, s, [=](ps_shard_actor standby) {
    auto& st = self->state;
    if (late_standby(st, s, epoch, primary, standby)) {
      self->send_exit(standby, caf::exit_reason::kill);
      if (epoch != st.standby_epoch) return;  // the flag is a newer spawn's
      // A fail-over while it was spawned: the promoted primary waited for this spawn to end.
      st.spawning_standby[s] = false;
      if (st.phase == run_phase::training) build_standby(self, s, true);
      return;
    }
    st.spawning_standby[s] = false;
    back_up(self, s, standby, rebuilt);
  }, [=](caf::error err) {
    auto& st = self->state;
    if (epoch != st.standby_epoch) return;  // dropped meanwhile: another may be spawning
    st.spawning_standby[s] = false;
    log_line("chief", standby_name(s) + " could not be spawned (" + describe(err)
                        + "); the shard has none");
  });
}

namespace {

void back_up(self_ptr self, int32_t s, ps_shard_actor standby, bool rebuilt) {
  auto& st = self->state;
  self->monitor(standby);
  st.standbys[s] = standby;
  st.standby_ready[s] = false;
  auto primary = st.shards[s];
  auto began = std::chrono::steady_clock::now();
  self->request(primary, st.cfg.request_timeout, backup_atom::value,
                caf::actor_cast<caf::strong_actor_ptr>(standby))
    .then(
      [=](uint64_t bytes) {
        auto& st = self->state;
        if (st.standbys[s] != standby || st.shards[s] != primary) return;  // superseded
        st.standby_ready[s] = true;
        auto ms = ms_since(began);
        if (!rebuilt) return;
        ++st.rereplications;
        char text[160];
        std::snprintf(text, sizeof text, "%s built again in %.1f ms (%llu bytes): protected",
                      standby_name(s).c_str(), ms, static_cast<unsigned long long>(bytes));
        log_line("chief", text);
        st.metrics->write(json_object().add("event", "rereplicated").add("shard", s)
                            .add("ms", ms).add("bytes", bytes).add("clock", st.global_clock())
                            .add("wall_s", st.elapsed()));
        st.metrics->flush();
      },
      [=](caf::error& err) {
        auto& st = self->state;
        if (st.standbys[s] != standby) return;
        log_line("chief", standby_name(s) + " could not be built (" + describe(err)
                            + "); the shard has none");
        st.standbys[s] = nullptr;
        self->send_exit(standby, caf::exit_reason::kill);
      });
}

} // namespace

void build_missing_standbys(self_ptr self, bool rebuilt) {
  for (int32_t s = 0; s < static_cast<int32_t>(self->state.shards.size()); ++s)
    build_standby(self, s, rebuilt);
}

void drop_standbys(self_ptr self) {
  auto& st = self->state;
  ++st.standby_epoch;  // a spawn in flight now brings a late standby, stopped when it comes
  std::fill(st.spawning_standby.begin(), st.spawning_standby.end(), false);
  st.after_failover.clear();  // the rollback restarts whatever waited for a fail-over
  for (auto& standby : st.standbys)
    if (standby) self->send_exit(std::exchange(standby, nullptr), caf::exit_reason::kill);
  std::fill(st.standby_ready.begin(), st.standby_ready.end(), false);
}

void on_next_failover(self_ptr self, int32_t s, std::function<void()> then) {
  auto& st = self->state;
  if (st.after_failover.size() < st.shards.size()) st.after_failover.resize(st.shards.size());
  st.after_failover[s].push_back(std::move(then));
}

bool on_standby_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  for (int32_t s = 0; s < static_cast<int32_t>(st.standbys.size()); ++s) {
    if (!st.standbys[s] || st.standbys[s].address() != dm.source) continue;
    st.standbys[s] = nullptr;
    st.standby_ready[s] = false;
    log_line("chief", standby_name(s) + " lost (" + caf::to_string(dm.reason)
                        + "); building another, the primary serves meanwhile");
    if (st.cfg.remote) forget_lost_standby(self, s);
    st.metrics->write(json_object().add("event", "standby_lost").add("shard", s)
                        .add("clock", st.global_clock()).add("wall_s", st.elapsed()));
    if (st.phase == run_phase::training) build_standby(self, s, true);
    return true;
  }
  return false;
}

void answer_reroutes_of(self_ptr self, int32_t w) {
  for (const auto& [s, run] : self->state.failing_over)
    if (!run.reported) self->send(run.episode, leave_atom::value, w);
}

void on_failover_done(self_ptr self, const failover_done& report) {
  auto s = report.shard;
  auto run = reporting_failover(self, s);
  if (!run) return;
  run->reported = true;
  auto& st = self->state;
  ++st.failovers;
  record_recovery(self, ps_role(s), run->detected, st.global_clock(), {});
  write_failover(self, s, report.ms, report.clocks_in_flight, report.pushes_resent,
                 report.pushes_deduplicated);
  // what was asked of the lost primary (a rejoin, an admit) is asked of the promoted shard
  if (s < static_cast<int32_t>(st.after_failover.size()))
    for (auto& then : std::exchange(st.after_failover[s], {})) then();
  if (st.phase == run_phase::training) build_standby(self, s, true);
  promotion_over(self, s);
}

void on_failover_failed(self_ptr self, const failover_failed& report) {
  if (reporting_failover(self, report.shard))
    failover_failed_because(self, report.shard, report.promoted, report.reason);
}

bool on_failover_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  for (const auto& [s, run] : st.failing_over) {
    if (run.episode.address() != dm.source) continue;
    if (!run.reported) {  // it ended without its report (a crash): it failed
      auto shard = s;
      failover_failed_because(self, shard, st.shards[shard],
                              "its fail-over ended without a report ("
                                + caf::to_string(dm.reason) + ")");
    }
    return true;
  }
  return false;
}

void abort_failovers(self_ptr self) {
  auto& st = self->state;
  for (auto& [s, run] : st.failing_over) {
    self->demonitor(run.episode.address());
    self->send_exit(run.episode, caf::exit_reason::kill);
  }
  st.failing_over.clear();
}

bool fail_over(self_ptr self, int32_t s, const caf::down_msg& dm) {
  auto& st = self->state;
  const bool finishing = st.phase == run_phase::finishing;
  if ((st.phase != run_phase::training && !finishing)
      || s >= static_cast<int32_t>(st.standbys.size()) || !st.standbys[s] || !st.standby_ready[s])
    return false;
  failover_plan plan;
  plan.shard = s;
  plan.detected = std::chrono::steady_clock::now();
  plan.request_timeout = st.cfg.request_timeout;
  auto promoted = plan.promoted = std::exchange(st.standbys[s], nullptr);
  st.standby_ready[s] = false;
  st.shards[s] = promoted;
  if (st.cfg.remote && s < static_cast<int32_t>(st.primary_host.size())) {
    auto& lost = st.ps_tasks[st.primary_host[s]];  // lost with its process, unless a new
    if (lost && lost.node() == dm.source.node())     // process of the task hosts there now
      lost = nullptr;
    st.primary_host[s] = st.standby_host[s];    // the ps task serving shard s from now on
  }
  record_failure(self, ps_role(s), loss_reason(st, ps_role(s), dm.reason),
                 "its standby takes over; nothing goes back to a checkpoint");
  if (finishing) drop_final_steps(self);
  // The lost primary held or was writing its part of it: it would never answer.
  abandon_checkpoint(self, ps_role(s).text() + " was lost");
  for (int32_t w = 0; w < static_cast<int32_t>(st.workers.size()); ++w)
    if (st.workers[w]) plan.workers.emplace_back(w, st.workers[w]);
  // Workers being replaced are left out: their rejoin is asked again of the promoted shard.
  for (int32_t w = 0; w < static_cast<int32_t>(st.live.size()); ++w)
    if (!st.live[w] && !st.done[w] && !st.replacing.count(w)) plan.left.push_back(w);
  auto detected = plan.detected;
  auto episode = spawn_failover_episode(self->system(), caf::actor_cast<failover_listener>(self),
                                        std::move(plan));
  self->monitor(episode);
  st.failing_over[s] = {episode, finishing, false, detected};
  abort_resize(self);  // its state was asked of the lost primary: asked again once this is over
  return true;
}

} // namespace actorps::chief_detail
