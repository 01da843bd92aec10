// What the chief does when a role is lost (its monitor's down message: a kill, a crash, or a
// process that stopped answering heartbeats), and the fault injection that causes it.
//
// - Worker: every shard stops waiting for it at once (leave). A replacement — spawned here in
//   simulate, or the restarted process when it joins again — enters at a clock every shard
//   agrees on: each shard first counts it as live at its own min clock (rejoin: the min cannot
//   advance past that), the chief takes the largest of those, and every shard admits it there.
//   A shard below that clock simply does not expect its gradient until its min reaches it, so
//   sync never mixes clocks and ssp's bound holds throughout. The replacement goes on with its
//   predecessor's data where that left it (the minibatch after the last one reported): entering
//   at clock C behind a predecessor whose last clock was P - 1, it trains C - P clocks past the
//   others' end, and every row of the epoch is trained once. A worker done before it is let go
//   by the shards (release_finished_workers), so that it does not hold the replacement back.
//   Distributed, a worker's process lost before training began, or while it was being
//   re-admitted, is awaited like any other: its next process takes over.
// - Evaluator: respawned (or re-set-up when its process is back); training never waits for it.
// - Shard: the whole run goes back to the newest checkpoint (rollback.cpp).
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

#include <cstdio>

namespace actorps::chief_detail {

namespace {

using time_point = std::chrono::steady_clock::time_point;

} // namespace

std::string loss_reason(const chief_state& st, role_id role, const caf::error& reason) {
  auto left = st.leaving.find(role);
  return left != st.leaving.end() ? "left on " + left->second : caf::to_string(reason);
}

void note_leaving(self_ptr self, role_id role, const std::string& why) {
  self->state.leaving[role] = why;
  log_line("chief", role.text() + " is leaving (" + why + ")");
}

void record_failure(self_ptr self, role_id role, const std::string& reason,
                    const std::string& consequence) {
  auto& st = self->state;
  ++st.failures;
  // A leave it announced is told as one; its next process may be lost for another reason.
  bool left = st.leaving.erase(role) > 0;
  log_line("chief", role.text() + (left ? " " + reason : " lost (" + reason + ")") + "; "
                      + consequence);
  st.metrics->write(json_object().add("event", "failure").add("role", to_string(role.kind))
                      .add("index", role.index).add("reason", reason)
                      .add("clock", st.global_clock()).add("wall_s", st.elapsed()));
  st.metrics->flush();
}

void record_recovery(self_ptr self, role_id role, time_point detected, int64_t clock,
                     const recovery_cost& cost) {
  auto& st = self->state;
  ++st.recoveries;
  auto ms = ms_since(detected);
  auto n = [](int64_t v) { return std::to_string(v); };
  char text[96];
  std::snprintf(text, sizeof text, "%s recovered in %.1f ms at clock %lld", role.text().c_str(),
                ms, static_cast<long long>(clock));
  std::string what = text;
  if (cost.resumed_batch >= 0)
    what += " (its data resumes at minibatch " + n(cost.resumed_batch) + ", "
            + n(cost.behind_clocks) + " clocks behind, trained past the others' end; "
            + n(cost.lost_clocks) + " clocks lost, " + n(cost.skipped_samples)
            + " samples skipped"
            + (cost.unreported_batches > 0
                 ? "; " + n(cost.unreported_batches) + " minibatches the shards hold were never "
                     "reported"
                 : std::string())
            + ")";
  else if (role.kind == role_kind::ps)
    what += " (" + n(cost.lost_clocks) + " clocks lost; " + n(cost.retrained_samples)
            + " samples trained again, " + n(cost.skipped_samples) + " skipped)";
  else
    what += " (" + n(cost.lost_clocks) + " clocks lost)";
  log_line("chief", what);
  auto event = json_object().add("event", "recovery").add("role", to_string(role.kind))
                 .add("index", role.index).add("ms", ms).add("clock", clock)
                 .add("lost_clocks", cost.lost_clocks)
                 .add("skipped_samples", cost.skipped_samples)
                 .add("retrained_samples", cost.retrained_samples);
  if (cost.resumed_batch >= 0)
    event.add("resumed_batch", cost.resumed_batch).add("behind_clocks", cost.behind_clocks)
      .add("unreported_batches", cost.unreported_batches);
  st.metrics->write(event.add("wall_s", st.elapsed()));
  st.metrics->flush();
}

void record_skipped(self_ptr self, int32_t w, const std::string& why) {
  auto& st = self->state;
  auto batches = std::max<int64_t>(0, st.batches_planned(w) - st.batches_trained(w));
  auto samples = batches * st.cfg.batch;
  log_line(log_level::warn, "chief", worker_role(w).text() + "'s last " + std::to_string(batches)
                                       + " minibatches (" + std::to_string(samples)
                                       + " samples) are not trained: " + why);
  st.metrics->write(json_object().add("event", "skipped").add("worker", w)
                      .add("samples", samples).add("reason", why)
                      .add("clock", st.global_clock()).add("wall_s", st.elapsed()));
}

void release_finished_workers(self_ptr self) {
  auto& st = self->state;
  auto workers = static_cast<int32_t>(st.workers.size());
  int64_t furthest = st.cfg.steps;
  for (int32_t w = 0; w < workers; ++w) furthest = std::max(furthest, st.end_clock(w));
  for (int32_t w = 0; w < workers; ++w) {
    if (!st.done[w] || st.released[w] || st.end_clock(w) >= furthest) continue;
    st.released[w] = true;
    for (auto& s : st.shards)
      if (s) self->send(s, leave_atom::value, w);
  }
}

namespace {

/// ask_all_shards for a change of the clock tables (rejoin, admit), which a primary lost before
/// it answered would leave unanswered (a promise held by a dead actor, or a process gone: the
/// request timeout, minutes later). With standbys a shard whose primary is lost is asked again
/// once its standby has taken over, after `again` (the standby may have the change already);
/// only the last request's answer counts. Any other error goes to `failed`.
template <class Reply, class Done, class Failed, class... Ts>
void ask_all_shards_across_failover(self_ptr self, Done done, Failed failed,
                                    std::function<void(const ps_shard_actor&)> again, Ts... xs) {
  struct asking {
    std::vector<Reply> replies;
    std::vector<uint64_t> attempt;  // by shard: the request whose answer counts
    std::vector<bool> answered;     // by shard
    std::size_t left = 0;
    bool over = false;
  };
  auto n = self->state.shards.size();
  auto job = std::make_shared<asking>();
  job->replies.resize(n);
  job->attempt.assign(n, 0);
  job->answered.assign(n, false);
  job->left = n;
  using asker = std::function<void(std::size_t, bool)>;
  auto ask = std::make_shared<asker>();
  // (held by the fail-over's waiters, not by itself: no cycle)
  *ask = [=, weak = std::weak_ptr<asker>(ask)](std::size_t s, bool resend) {
    auto& st = self->state;
    if (job->over || job->answered[s]) return;
    auto shard = st.shards[s];
    if (!shard) {
      job->over = true;
      return failed(make_error(errc::shard_lost, ps_role(static_cast<int32_t>(s)).text()));
    }
    if (resend) again(shard);
    auto mine = ++job->attempt[s];
    if (st.cfg.replicas > 0)
      on_next_failover(self, static_cast<int32_t>(s), [=, strong = weak.lock()] {
        if (strong) (*strong)(s, true);
      });
    self->request(shard, st.cfg.request_timeout, xs...)
      .then(
        [=](Reply& reply) {
          if (job->over || job->attempt[s] != mine) return;  // asked again since
          job->answered[s] = true;
          job->replies[s] = std::move(reply);
          if (--job->left > 0) return;
          job->over = true;
          done(std::move(job->replies));
        },
        [=](caf::error& err) {
          if (job->over || job->attempt[s] != mine) return;
          const auto& st = self->state;
          if (st.cfg.replicas > 0 && primary_gone(err) && st.phase == run_phase::training)
            return;  // asked again once its standby has taken over
          job->over = true;
          failed(err);
        });
  };
  for (std::size_t s = 0; s < n; ++s) (*ask)(s, false);
}

void replace_worker(self_ptr self, int32_t w, time_point detected) {
  auto& st = self->state;
  ++st.replacements[w];
  st.replacing.insert(w);
  // A rollback gives every worker a new incarnation and restarts them itself, and a failed
  // run stops: either way the steps below give up.
  auto incarnation = st.incarnation[w] = st.next_incarnation++;
  auto superseded = [=] {
    const auto& st = self->state;
    return st.incarnation[w] != incarnation || st.phase == run_phase::stopping;
  };
  auto give_up = [=](const std::string& why) {
    if (superseded()) return;
    auto& st = self->state;
    st.replacing.erase(w);
    st.data_stopped(w);
    log_line("chief", worker_role(w).text() + " could not be replaced (" + why
                        + "); the run goes on without it");
    record_skipped(self, w, "it could not be replaced");
    for (auto& s : st.shards)
      if (s) self->send(s, leave_atom::value, w);  // undoes a rejoin
    check_all_done(self);
  };
  // A standby may hold the rejoin already (its primary forwarded it and was lost before
  // answering): a leave first undoes it, so that the promoted shard answers it again.
  auto leave_first = [=](const ps_shard_actor& shard) { self->send(shard, leave_atom::value, w); };
  auto admit_again = [](const ps_shard_actor&) {};  // admitting twice at one clock is the same
  ask_all_shards_across_failover<rejoin_point>(self, [=](std::vector<rejoin_point> points) {
    if (superseded()) return;
    auto clock = points.front().clock;
    auto pushed = points.front().pushed, pushed_most = pushed;
    for (const auto& p : points) {
      clock = std::max(clock, p.clock);
      pushed = std::min(pushed, p.pushed);
      pushed_most = std::max(pushed_most, p.pushed);
    }
    if (pushed != pushed_most)  // a process lost while its pushes were on their way
      log_line("chief", worker_role(w).text() + "'s pushes of clocks " + std::to_string(pushed)
                          + " to " + std::to_string(pushed_most - 1)
                          + " reached some shards only; its replacement trains them again");
    ask_all_shards_across_failover<caf::ok_atom>(self, [=](std::vector<caf::ok_atom>) {
      if (superseded()) return;
      // It goes on with its predecessor's data after the last clock every shard holds of it
      // (the shards' word: a process sends its reports in batches, so they may lag), at the
      // clock it enters at: it runs as many clocks past the others' end as it enters behind.
      auto& st = self->state;
      auto& spans = st.data_spans[w];
      auto& last = spans.back();
      const auto reported = st.batches_trained(w);
      // (below its span's start: a replacement admitted there that pushed nothing)
      auto left_at = std::max(last.from, pushed);
      last.until = left_at;
      auto batch = left_at - last.offset;
      st.unreported[w] += std::max<int64_t>(0, batch - reported);
      spans.push_back({clock, std::numeric_limits<int64_t>::max(), clock - batch});
      release_finished_workers(self);
      start_worker(self, w, clock, [=](bool ok) {
        if (superseded()) return;
        if (!ok) return give_up("its role did not start");
        auto& st = self->state;
        st.replacing.erase(w);
        self->send(st.workers[w], start_atom::value);
        recovery_cost cost;
        cost.behind_clocks = clock - left_at;
        cost.resumed_batch = batch;
        cost.unreported_batches = std::exchange(st.unreported[w], 0);
        record_recovery(self, worker_role(w), detected, clock, cost);
      });
    }, [=](const caf::error& err) { give_up(describe(err)); }, admit_again, admit_atom::value, w,
      clock, incarnation);
  }, [=](const caf::error& err) { give_up(describe(err)); }, leave_first, rejoin_atom::value, w);
}

/// Distributed: worker w's process was lost while the replacement of its previous one was under
/// way (re-admitted, or its role starting): that replacement stops, and the next process takes
/// over when it joins, as after any loss.
void abandon_replacement(self_ptr self, int32_t w, const std::string& reason) {
  auto& st = self->state;
  st.data_stopped(w);
  st.incarnation[w] = st.next_incarnation++;  // the steps under way give up (superseded)
  st.replacing.erase(w);
  for (auto& s : st.shards)
    if (s) self->send(s, leave_atom::value, w);  // undoes a rejoin or admit
  record_failure(self, worker_role(w), reason,
                 "it was being re-admitted; its next process takes over");
  if (!st.awaiting_rejoin.count(worker_role(w)))
    await_worker_process(self, w, std::chrono::steady_clock::now());
}

/// Distributed: worker w's process (or its role) is lost before training began. Before the
/// roles are placed it simply joins again; after, its next process takes over once training
/// runs, within --connect-timeout, as after any loss.
void lose_before_training(self_ptr self, int32_t w, bool node, const std::string& reason) {
  auto& st = self->state;
  if (node) st.worker_nodes[w] = nullptr;
  if (!st.roles_placed) {
    log_line("chief", worker_role(w).text() + "'s process lost (" + reason
                        + ") before the roles were placed; waiting for it to join again");
    return;
  }
  st.data_stopped(w);
  if (!st.awaiting_rejoin.count(worker_role(w)))  // (else its loss is known already)
    record_failure(self, worker_role(w), reason,
                   "before training began; its next process takes over");
  if (auto was = std::exchange(st.workers[w], nullptr))
    self->send_exit(was, caf::exit_reason::kill);  // (gone already with its process)
  if (node) fail_pending_start(self, w);  // answered as failed: start_roles goes on without it
  if (st.awaiting_rejoin.count(worker_role(w))) return;
  st.live[w] = false;
  for (auto& s : st.shards)
    if (s) self->send(s, leave_atom::value, w);
  await_worker_process(self, w, std::chrono::steady_clock::now());
}

void restart_evaluator(self_ptr self, time_point detected) {
  auto& st = self->state;
  ++st.evaluator_replacements;
  auto rollbacks = st.rollbacks;
  start_evaluator(self, [=](bool ok) {
    // a rollback meanwhile restarted the evaluator itself (and may be over already)
    if (self->state.rollbacks != rollbacks || !ok) return;
    record_recovery(self, evaluator_role(), detected, self->state.global_clock(), {});
  });
}

} // namespace

bool may_replace(const chief_state& st, int so_far) {
  return st.phase != run_phase::finishing && so_far < st.cfg.max_replacements;
}

bool primary_gone(const caf::error& err) {
  return err == caf::sec::request_receiver_down || err == errc::shard_lost
         || err == caf::exit_reason::remote_link_unreachable;
}

void on_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  auto is = [&](const auto& handle) { return handle && handle.address() == dm.source; };
  auto now = std::chrono::steady_clock::now();
  if (on_spare_down(self, dm)) {  // a spare ps task (spare_tasks.cpp)
    arriving_shard_down(self, dm);  // and its copies ahead, if any, given again to the next
    return;
  }
  if (on_spare_worker_down(self, dm)) return;  // a spare worker task (spare_workers.cpp)
  if (rollback_episode_down(self, dm)) return;
  if (arriving_shard_down(self, dm)) return;  // spawned for a copy ahead (copy_ahead.cpp)
  for (auto& task : st.ps_tasks)
    if (is(task)) {  // a host of standbys only (rejoin_as_standby_host): their own downs tell
      task = nullptr;
      return;
    }
  for (int32_t w = 0; w < static_cast<int32_t>(st.workers.size()); ++w) {
    // A worker is lost when its actor or (distributed) the process hosting it goes down.
    bool node = w < static_cast<int32_t>(st.worker_nodes.size()) && is(st.worker_nodes[w]);
    if (!is(st.workers[w]) && !node) continue;
    auto reason = loss_reason(st, worker_role(w), dm.reason);
    if (is_error(dm.reason, errc::bad_data))  // a replacement would stop at the same line
      return fail_run(self, worker_role(w).text() + " stopped on its training data", dm.reason);
    if (st.before_training() && !st.cfg.remote)  // nothing would start it again
      return fail_run(self, worker_role(w).text() + " lost before training began",
                      dm.reason ? dm.reason : caf::make_error(caf::sec::runtime_error));
    if (st.before_training()) return lose_before_training(self, w, node, reason);
    st.data_stopped(w);
    if (st.phase == run_phase::resizing && !node) {
      // A worker kept through a change of shards (the others are stopped): started afresh at
      // the change's clock with the others once the shards have moved.
      st.workers[w] = nullptr;
      record_failure(self, worker_role(w), reason, "started again once the shards have moved");
      return;
    }
    if (node) {
      st.worker_nodes[w] = nullptr;  // its restarted process may join again
      if (st.replacing.count(w)) abandon_replacement(self, w, reason);
      fail_pending_start(self, w);
      if (st.phase == run_phase::resizing && st.resizing) {
        // A worker kept through a change of shards, its process lost while the shards move:
        // as a stopped one, its next process is awaited once they have (restart_roles_at).
        st.workers[w] = nullptr;
        return;
      }
    }
    bool was_live = st.live[w] && !st.done[w] && st.workers[w];
    st.workers[w] = nullptr;
    answer_reroutes_of(self, w);  // a fail-over waiting for it would wait for nothing
    if (!was_live) {  // a finished worker leaving normally, already handled, or stopped:
      if (node && st.phase == run_phase::rolling_back && !st.done[w])  // restart_roles awaits it
        log_line("chief", worker_role(w).text() + "'s process lost (" + reason
                            + ") while the run goes back; its next process takes over");
      return;
    }
    st.live[w] = false;
    for (auto& s : st.shards)
      if (s) self->send(s, leave_atom::value, w);
    if (is_error(dm.reason, errc::shard_lost)) {
      // Not the worker's fault: the lost shard's recovery restarts it with the others.
      st.parked.insert(w);
      log_line("chief", worker_role(w).text() + " stopped (" + describe(dm.reason)
                          + "); it restarts with the shard's recovery");
      return;
    }
    bool replace = may_replace(st, st.replacements[w]);
    record_failure(self, worker_role(w), reason,
                   !replace ? "the run goes on without it"
                   : st.cfg.remote ? "the shards stop waiting for it until its process is back"
                                   : "the shards stop waiting for it; replacing it");
    if (replace && !st.cfg.remote)
      replace_worker(self, w, now);
    else if (replace)
      await_worker_process(self, w, now);
    else
      record_skipped(self, w, "it is not replaced (--max-replacements)");
    check_all_done(self);
    return;
  }
  if (is(st.evaluator) || is(st.evaluator_node)) {
    if (is(st.evaluator_node)) st.evaluator_node = nullptr;
    if (!st.evaluator) return;  // already handled via the other handle
    st.evaluator = nullptr;
    auto reason = loss_reason(st, evaluator_role(), dm.reason);
    bool replace = may_replace(st, st.evaluator_replacements);
    record_failure(self, evaluator_role(), reason,
                   replace ? "respawning it; training does not wait"
                           : "continuing without evaluations");
    abandon_eval(self);  // a promise held by a dead evaluator may never be answered
    if (replace && !st.cfg.remote)
      restart_evaluator(self, now);
    else if (replace)
      st.awaiting_rejoin[evaluator_role()] = now;
    return;
  }
  if (on_standby_down(self, dm) || on_failover_down(self, dm)) return;
  for (int32_t s = 0; s < static_cast<int32_t>(st.shards.size()); ++s)
    if (is(st.shards[s])) {
      if (fail_over(self, s, dm)) return;
      return begin_rollback(self, s, dm);
    }
}

void on_rejoined_node(self_ptr self, role_id role) {
  auto& st = self->state;
  auto i = st.awaiting_rejoin.find(role);
  if (i == st.awaiting_rejoin.end()) {  // not lost as far as we know, or given up
    if (role.kind == role_kind::evaluator) start_late_evaluator(self);  // its first join
    return;
  }
  auto detected = i->second;
  st.awaiting_rejoin.erase(i);
  if (role.kind == role_kind::worker)
    replace_worker(self, role.index, detected);
  else
    restart_evaluator(self, detected);
}

void check_kills(self_ptr self) {
  auto& st = self->state;
  auto global = st.global_clock();
  for (int32_t i = 0; i < static_cast<int32_t>(st.cfg.kills.size()); ++i)
    if (!st.kill_done[i] && st.cfg.kills[i].at_clock >= 0 && global >= st.cfg.kills[i].at_clock)
      run_kill(self, i);
}

void schedule_timed_kills(self_ptr self) {
  auto& st = self->state;
  for (int32_t i = 0; i < static_cast<int32_t>(st.cfg.kills.size()); ++i)
    if (st.cfg.kills[i].at_seconds >= 0)
      self->delayed_send(self, std::chrono::milliseconds(static_cast<int64_t>(
                                 st.cfg.kills[i].at_seconds * 1000)),
                         kill_atom::value, i);
}

void run_kill(self_ptr self, int32_t i) {
  auto& st = self->state;
  if (i < 0 || i >= static_cast<int32_t>(st.kill_done.size()) || st.kill_done[i]) return;
  st.kill_done[i] = true;
  const auto& k = st.cfg.kills[i];
  caf::actor_addr target;
  if (k.target == role_kind::worker && st.workers[k.index])
    target = st.workers[k.index].address();
  else if (k.target == role_kind::ps && k.index < static_cast<int32_t>(st.shards.size())
           && st.shards[k.index])  // (a --resize may have removed it)
    target = st.shards[k.index].address();
  else if (k.target == role_kind::ps && k.index >= static_cast<int32_t>(st.shards.size())
           && static_cast<std::size_t>(k.index) - st.shards.size() < st.copy.arriving.size()
           && st.copy.arriving[static_cast<std::size_t>(k.index) - st.shards.size()])
    // spawned for a growth's copy ahead, not serving yet
    target = st.copy.arriving[static_cast<std::size_t>(k.index) - st.shards.size()].address();
  else if (k.target == role_kind::evaluator && st.evaluator)
    target = st.evaluator.address();
  auto name = role_id{k.target, k.index}.text();
  auto clock = st.global_clock();
  if (!target) {
    log_line("chief", "fault injection: " + name + " is not running now; nothing killed");
    return;
  }
  log_line("chief", "fault injection: killing " + name + " at clock " + std::to_string(clock));
  st.metrics->write(json_object().add("event", "kill").add("role", to_string(k.target))
                      .add("index", k.index).add("clock", clock).add("wall_s", st.elapsed()));
  self->send_exit(target, caf::exit_reason::kill);
}

void report_unfired_kills(self_ptr self) {
  auto& st = self->state;
  for (std::size_t i = 0; i < st.cfg.kills.size(); ++i) {
    if (st.kill_done[i]) continue;
    st.kill_done[i] = true;  // a timer still on its way does nothing now
    const auto& k = st.cfg.kills[i];
    char when[64];
    if (k.at_clock >= 0)
      std::snprintf(when, sizeof when, "clock=%lld", static_cast<long long>(k.at_clock));
    else if (k.at_resize >= 1)
      std::snprintf(when, sizeof when, "resize=%d", k.at_resize);
    else
      std::snprintf(when, sizeof when, "seconds=%g", k.at_seconds);
    auto planned = role_id{k.target, k.index}.text() + "@" + when;
    auto clock = st.global_clock();
    log_line("chief", "planned kill " + planned + " never fired (the run ended at clock "
                        + std::to_string(clock) + ")");
    st.metrics->write(json_object().add("event", "kill_not_fired").add("kill", planned)
                        .add("clock", clock).add("wall_s", st.elapsed()));
  }
}

} // namespace actorps::chief_detail
