// A fail-over episode (failover.hpp): shard s's primary is lost and its standby is ready. The
// chief has put the standby in the primary's slot and spawned this actor, which goes through
// three behaviours and reports once:
//
//   promoting --(promote answered: clocks apart)--> rerouting --(every worker answered)--> counting
//       |                                              |                                      |
//       | (promote refused or timed out,               | (the promoted shard lost)            | (its counters
//       |  or the promoted shard lost)                 |                                      |  read, or not)
//       v                                              v                                      v
//     failed <-----------------------------------------+                                    done
//
//   promoting   (promote) to the standby; the workers lost for good are said to have left again
//   rerouting   the promoted shard's count of deduplicated pushes is read, then every worker is
//               asked to send its request in flight to the promoted shard (reroute)
//   counting    the count is read again: the difference is what the re-sent pushes repeated
//   done        (failover, failover_done) to the chief: the promoted handle, how long it took,
//               the clocks in flight, the pushes re-sent and deduplicated; then it quits
//   failed      (failover, failover_failed) with the reason; then it quits
//
// Failures during the episode:
//   - a worker lost ((leave, w) from the chief): not asked if the reroutes are not sent yet,
//     else its answer, which may never come, counts as nothing re-sent; the episode goes on;
//   - the promoted shard lost while promoting or rerouting: failed (the chief then goes back
//     to a checkpoint, as the promoted shard's own down message tells it too); while counting
//     it is done already, with the deduplicated count unknown (-1);
//   - another primary lost: its own episode runs alongside (every shard has its own standby);
//   - a shard without a ready standby lost, or the run ending: the chief aborts the episode
//     (kills it, and ignores a report already on its way): the rollback's or the end's state
//     is the one that holds;
//   - the chief lost: the episode quits (it monitors the chief).
#include "actors/chief/failover.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"
#include "actors/roles/authorisation.hpp"

#include <caf/all.hpp>

#include <map>
#include <string>

namespace actorps {

namespace {

enum class step { promoting, rerouting, counting, over };

struct failover_state {
  static inline const char* name = "failover";
  failover_plan plan;
  failover_listener chief;
  step at = step::promoting;
  int64_t apart = 0;                   // the promoted shard's clocks in flight
  std::map<int32_t, bool> waiting;     // workers whose reroute answer has not come
  int32_t resent = 0;
  int64_t deduplicated_before = -1;    // -1: not read
  double ms = 0;
  std::string who() const { return "failover ps:" + std::to_string(plan.shard); }
};

using episode = failover_episode_actor::stateful_pointer<failover_state>;
using behavior = failover_episode_actor::behavior_type;

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

void fail(episode self, const std::string& why) {
  auto& st = self->state;
  if (st.at == step::over) return;
  st.at = step::over;
  self->send(st.chief, failover_atom::value, failover_failed{st.plan.shard, st.plan.promoted, why});
  self->quit();
}

void report(episode self, int64_t deduplicated) {
  auto& st = self->state;
  if (st.at == step::over) return;
  st.at = step::over;
  self->send(st.chief, failover_atom::value,
             failover_done{st.plan.shard, st.plan.promoted, st.ms, st.apart, st.resent,
                           deduplicated});
  self->quit();
}

/// (leave, w) from this process only: worker w is lost.
template <class Lost>
auto worker_lost(episode self, Lost lost) {
  return [=](leave_atom, int32_t w) {
    if (note_refusal(self->state.who(),
                     authorise_local(current_role(self), "leave (failover)")))
      return;
    lost(w);
  };
}

behavior counting(episode self) {
  auto& st = self->state;
  st.at = step::counting;
  st.ms = ms_since(st.plan.detected);
  // Its reply comes after every re-sent push: each worker sent it before answering.
  self->request(st.plan.promoted, st.plan.request_timeout, stats_atom::value)
    .then(
      [=](const shard_stats& stats) {
        auto before = self->state.deduplicated_before;
        report(self, before < 0 ? -1 : static_cast<int64_t>(stats.pushes_deduplicated) - before);
      },
      [=](caf::error&) { report(self, -1); });
  return {worker_lost(self, [](int32_t) {})};  // every answer is in
}

void answered(episode self, int32_t w, int32_t resent) {
  auto& st = self->state;
  if (st.at != step::rerouting || st.waiting.erase(w) == 0) return;  // counted already
  st.resent += resent;
  if (st.waiting.empty()) self->become(counting(self));
}

behavior rerouting(episode self) {
  auto& st = self->state;
  st.at = step::rerouting;
  auto s = st.plan.shard;
  auto promoted = st.plan.promoted;
  // Its reply comes before any re-sent push: it is in the promoted shard's mailbox before any
  // worker is told to re-send.
  self->request(promoted, st.plan.request_timeout, stats_atom::value)
    .then(
      [=](const shard_stats& stats) {
        self->state.deduplicated_before = static_cast<int64_t>(stats.pushes_deduplicated);
      },
      [](caf::error&) {});
  for (const auto& [w, worker] : st.plan.workers) {
    st.waiting[w] = true;
    auto index = w;
    self->request(worker, st.plan.request_timeout, reroute_atom::value, s, promoted)
      .then([=](int32_t n) { answered(self, index, n); },
            [=](caf::error&) { answered(self, index, 0); });
  }
  if (st.waiting.empty()) return counting(self);
  return {worker_lost(self, [=](int32_t w) { answered(self, w, 0); })};
}

behavior promoting(episode self) {
  auto& st = self->state;
  self->request(st.plan.promoted, st.plan.request_timeout, promote_atom::value)
    .then(
      [=](int64_t apart) {
        if (self->state.at != step::promoting) return;
        self->state.apart = apart;
        self->become(rerouting(self));
      },
      [=](caf::error& err) { fail(self, "it could not be promoted: " + describe(err)); });
  // Behind the promotion: the promoted shard would otherwise wait for such a worker forever
  // (a leave of a worker already gone does nothing).
  for (auto w : st.plan.left) self->send(st.plan.promoted, leave_atom::value, w);
  return {worker_lost(self, [=](int32_t w) {  // not asked to reroute
    auto& workers = self->state.plan.workers;
    workers.erase(std::remove_if(workers.begin(), workers.end(),
                                 [w](const auto& entry) { return entry.first == w; }),
                  workers.end());
  })};
}

behavior failover_episode(episode self, failover_listener chief, failover_plan plan) {
  self->state.plan = std::move(plan);
  self->state.chief = chief;
  self->monitor(chief);
  self->monitor(self->state.plan.promoted);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source == st.chief.address()) return self->quit();
    if (dm.source != st.plan.promoted.address()) return;
    if (st.at == step::promoting || st.at == step::rerouting)
      fail(self, "it was lost while " + std::string(st.at == step::promoting ? "being promoted"
                                                                              : "rerouting")
                   + " (" + caf::to_string(dm.reason) + ")");
  });
  return promoting(self);
}

} // namespace

failover_episode_actor spawn_failover_episode(caf::actor_system& sys, failover_listener report_to,
                                              failover_plan plan) {
  return sys.spawn(failover_episode, std::move(report_to), std::move(plan));
}

} // namespace actorps
