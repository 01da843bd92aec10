// Hot standbys (--replicas 1; actors/roles/replication.hpp says how a shard and its standby stay
// identical). The chief's part:
//
//   build_standby     spawns shard s's standby and tells the primary (backup); the standby is
//                     ready once the primary answers (it holds the state). At the start of
//                     training, after a rollback, and after every fail-over or lost standby
//                     (a "rereplicated" event then), while training continues.
//   fail_over         a lost primary whose standby is ready: the standby is promoted, every
//                     worker sends its request in flight to it again (reroute), the evaluator
//                     is restarted on the new shard list, a "failover" event says how long it
//                     took and what was re-sent; then a new standby is built. Nothing goes
//                     back to a checkpoint.
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
    self->request(task, self->state.cfg.request_timeout, standby_atom::value, s, primary)
      .then([=](ps_shard_actor standby) { spawned(std::move(standby)); next(); },
            [=](caf::error& err) { failed(std::move(err)); next(); });
  };
  if (auto [i, first] = st.standby_dials.try_emplace(pair); !first)
    return i->second.push_back(ask);
  ask();
}

/// Asks every worker to send its request in flight to shard s again, to `promoted`; calls
/// `done` with the pushes re-sent once every one has answered (a worker gone counts none: its
/// error, or its loss, which can come first when its process died with the primary's and the
/// request went to a connection already closed: then no answer ever comes).
void reroute_workers(self_ptr self, int32_t s, ps_shard_actor promoted,
                     std::function<void(int32_t)> done) {
  auto& st = self->state;
  auto resent = std::make_shared<int32_t>(0);
  std::vector<int32_t> targets;
  for (int32_t w = 0; w < static_cast<int32_t>(st.workers.size()); ++w)
    if (st.workers[w]) targets.push_back(w);
  auto one = after_all(targets.size(), [=] { done(*resent); });
  for (auto w : targets) {
    auto answered = std::make_shared<bool>(false);
    auto answer = [=](int32_t n) {
      if (std::exchange(*answered, true)) return;
      *resent += n;
      one();
    };
    auto& pending = st.pending_reroutes[w];
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [](const auto& p) { return *p.answered; }),
                  pending.end());
    pending.push_back({answered, [=] { answer(0); }});
    self->request(st.workers[w], st.cfg.request_timeout, reroute_atom::value, s, promoted)
      .then([=](int32_t n) { answer(n); }, [=](caf::error&) { answer(0); });
  }
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
/// set up on the new shards; then training may end (check_all_done waits for every promotion,
/// so that the final evaluation reads the promoted shard), or, when the run was finishing, its
/// final steps start over.
void promotion_over(self_ptr self, int32_t s, bool finishing) {
  auto phase = self->state.phase;
  if (phase != (finishing ? run_phase::finishing : run_phase::training)) {
    --self->state.promoting;  // a rollback or the run's end took over meanwhile
    return;
  }
  if (finishing)
    log_line("chief", "the final checkpoint, evaluation and state start over on the promoted "
                        + ps_role(s).text());
  restart_evaluator_on_new_shards(self, [=] {
    auto& st = self->state;
    --st.promoting;
    if (!finishing) return check_all_done(self);
    if (st.phase == run_phase::finishing) final_checkpoint(self, [=] { evaluate_final(self); });
  });
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
  auto i = self->state.pending_reroutes.find(w);
  if (i == self->state.pending_reroutes.end()) return;
  auto waiting = std::move(i->second);
  self->state.pending_reroutes.erase(i);
  for (auto& p : waiting) p.answer_nothing();  // those answered already do nothing
}

bool fail_over(self_ptr self, int32_t s, const caf::down_msg& dm) {
  auto& st = self->state;
  const bool finishing = st.phase == run_phase::finishing;
  if ((st.phase != run_phase::training && !finishing)
      || s >= static_cast<int32_t>(st.standbys.size()) || !st.standbys[s] || !st.standby_ready[s])
    return false;
  auto detected = std::chrono::steady_clock::now();
  auto promoted = std::exchange(st.standbys[s], nullptr);
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
  ++st.promoting;
  if (finishing) drop_final_steps(self);
  // The lost primary held or was writing its part of it: it would never answer.
  abandon_checkpoint(self, ps_role(s).text() + " was lost");
  self->request(promoted, st.cfg.request_timeout, promote_atom::value)
    .then(
      [=](int64_t apart) {
        auto& st = self->state;
        if (st.shards[s] != promoted || st.phase != (finishing ? run_phase::finishing
                                                               : run_phase::training)) {
          --st.promoting;  // a rollback or the run's end took over
          return;
        }
        if (s < static_cast<int32_t>(st.after_failover.size()))  // asked of the lost primary
          for (auto& then : std::exchange(st.after_failover[s], {})) then();
        // The shard's count of deduplicated pushes before and after the re-sent ones: the
        // first request is in its mailbox before any worker is told to re-send, the second
        // after every re-sent push (the workers sent them before answering).
        auto before = std::make_shared<int64_t>(-1);
        self->request(promoted, st.cfg.request_timeout, stats_atom::value)
          .then([=](const shard_stats& stats) {
                  *before = static_cast<int64_t>(stats.pushes_deduplicated);
                },
                [=](caf::error&) {});
        reroute_workers(self, s, promoted, [=](int32_t resent) {
          auto ms = ms_since(detected);
          auto& st = self->state;
          ++st.failovers;
          record_recovery(self, ps_role(s), detected, st.global_clock(), {});
          self->request(promoted, st.cfg.request_timeout, stats_atom::value)
            .then([=](const shard_stats& stats) {
                    auto after = static_cast<int64_t>(stats.pushes_deduplicated);
                    write_failover(self, s, ms, apart, resent, *before < 0 ? -1 : after - *before);
                  },
                  [=](caf::error&) { write_failover(self, s, ms, apart, resent, -1); });
          if (self->state.phase == run_phase::training) build_standby(self, s, true);
          promotion_over(self, s, finishing);
        });
      },
      [=](caf::error& err) {
        // Lost too (its down message sends the run to the rollback), or refused: then it is
        // stopped, with the same effect.
        --self->state.promoting;
        log_line("chief", standby_name(s) + " could not take over: " + describe(err));
        if (self->state.shards[s] == promoted) self->send_exit(promoted, caf::exit_reason::kill);
      });
  // A leave sent to the lost primary may have died with it before reaching the standby (a
  // worker lost at the same moment): the promoted shard would wait for that worker forever.
  // Said again, behind the promotion (a leave of a worker already gone does nothing). Workers
  // being replaced are left out: their rejoin is asked again of the promoted shard.
  for (int32_t w = 0; w < static_cast<int32_t>(st.live.size()); ++w)
    if (!st.live[w] && !st.done[w] && !st.replacing.count(w))
      self->send(promoted, leave_atom::value, w);
  return true;
}

} // namespace actorps::chief_detail
