// A change of shards copies the rows it moves ahead, while the run trains:
//
//   maybe_copy_ahead  a report shows the change's clock near (copy_lead_s of training at the
//                     rate so far, copy_lead_clocks at least): the shards beyond the old ones are
//                     spawned, empty (in a distributed run: the spare ps tasks' shards the
//                     change will take, waiting empty), and every old shard is asked for its
//                     first copy step
//   copy_from         an old shard's step (ps_shard's (resize, copy, ...)): at most copy_step
//                     rows looked at, those whose bucket the change gives another shard copied
//                     and marked; each copy goes to its new shard, which keeps it aside
//                     ((resize, copy, rows)); once every copy of a step is taken, the next step.
//                     A shard at the change's clock refuses: its hand-over holds the rest
//   the change        the hand-overs at the clock hold only the rows changed or not copied
//                     since, and the keys copied that went (sparse_table::pick_after_copy); it
//                     waits for copies still on their way (begin_held_resize), takes the
//                     spawned shards (take_arriving_shard) and the copies each took, so that
//                     a shard lost and spawned again is given them again (resize_episode)
//
// A shard of the copy that is lost before the change: its copies go to the one the change
// spawns or takes instead. A copy a shard refuses fails the change (the hand-overs count on
// every copy). A rollback, a fail-over, a change that cannot be made or the run's end abandons
// it (end_copy_ahead): the spawned shards stop (a spare's forgets its copies) and every old
// shard forgets what it copied and kept aside, before anything it is asked next, so that a
// hand-over asked again is whole. A distributed run asked to change its shards (actorps scale,
// --max-rows-per-shard) sets the change's clock the copy's lead ahead (copy_ahead_lead).
#include "actors/chief/state.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"
#include "actors/protocol/placement_change.hpp"
#include "actors/roles/ps_shard.hpp"

#include <caf/scheduler/abstract_coordinator.hpp>

#include <algorithm>
#include <cmath>
#include <thread>

namespace actorps::chief_detail {

namespace {

/// How long before the change's clock the copy starts, in seconds of training at the rate so
/// far: about what copying 3.5 M rows took in live_resize.sh's sparse case (2.3-6 s on two busy
/// cores; what is not copied by the clock goes in the hand-over), short enough that few copied
/// rows change again (3 % of them there).
constexpr double copy_lead_s = 2.0;
/// And at least this many clocks before it (the rate is not known yet early in a run).
constexpr int64_t copy_lead_clocks = 8;
/// Rows an old shard looks at in one step: a few milliseconds, so that pushes wait little.
constexpr uint64_t copy_step = 64 * 1024;

ps_shard_actor destination(const chief_state& st, std::size_t s) {
  const auto old = st.shards.size();
  return s < old ? st.shards[s] : st.copy.arriving[s - old];
}

/// --copy-ahead: always, never, or (auto) when a core of this process is left beyond one per
/// worker and one per shard of either size: the copy is as much work as moving the rows at the
/// clock, and on busy cores it only slows the clocks around it. A distributed run's shards and
/// workers have cores the chief does not know of: auto copies ahead only in one process.
bool copy_ahead_wanted(self_ptr self, int32_t shards) {
  const auto& cfg = self->state.cfg;
  if (cfg.copy_ahead != copy_ahead_policy::automatic)
    return cfg.copy_ahead == copy_ahead_policy::always;
  if (cfg.remote) return false;
  const auto cores = std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()),
                                           self->system().scheduler().num_workers());
  const auto busy = static_cast<std::size_t>(cfg.spec.workers)
                    + static_cast<std::size_t>(std::max(shards, cfg.spec.shards));
  return cores > busy;
}

void settle(self_ptr self) {
  auto& st = self->state;
  if (st.copy.in_flight > 0) return;
  st.copy.ended = std::chrono::steady_clock::now();
  if (st.copy.held_states) begin_held_resize(self);
}

void copy_from(self_ptr self, std::size_t source) {
  auto& st = self->state;
  const auto generation = st.copy.generation;
  ++st.copy.in_flight;
  self->request(st.shards[source], st.cfg.request_timeout, resize_atom::value, copy_atom::value,
                st.copy.clock, st.copy.placement, copy_step)
    .then(
      [=](bool done, std::vector<wire_buffer>& copies) {
        auto& st = self->state;
        if (st.copy.generation != generation) return;  // ended meanwhile
        auto left = std::make_shared<std::size_t>(0);
        for (std::size_t s = 0; s < copies.size() && s < st.copy.staged.size(); ++s) {
          if (copies[s].size_bytes() == 0) continue;
          auto copy = copies[s];
          const auto to = destination(st, s);
          if (!to) {  // a spawned shard lost: for the one the change spawns instead
            st.copy.staged[s].push_back(copy);
            continue;
          }
          ++*left;
          ++st.copy.in_flight;
          self->request(to, st.cfg.request_timeout, resize_atom::value, copy_atom::value, copy)
            .then(
              [=](caf::ok_atom) {
                auto& st = self->state;
                if (st.copy.generation != generation) return;
                st.copy.staged[s].push_back(copy);
                st.copy.bytes += copy.size_bytes();
                ++st.copy.chunks;
                --st.copy.in_flight;
                if (--*left == 0 && !done && !st.copy.failed) copy_from(self, source);
                settle(self);
              },
              [=](caf::error& err) {
                auto& st = self->state;
                if (st.copy.generation != generation) return;
                // A spawned shard lost (its down message may come after this answer): its
                // copies go to the next one (arriving_shard_down); anything else leaves a copy
                // the hand-overs count on untaken (an old shard lost: a rollback ends the copy).
                const bool lost = s >= st.shards.size()
                                  && (st.copy.arrived_lost[s - st.shards.size()]
                                      || err == caf::sec::request_receiver_down);
                if (lost) st.copy.staged[s].push_back(copy);
                else if (!st.copy.failed) st.copy.failed = std::move(err);
                --st.copy.in_flight;
                if (--*left == 0 && !done && !st.copy.failed) copy_from(self, source);
                settle(self);
              });
        }
        --st.copy.in_flight;
        if (*left == 0 && !done && !st.copy.failed) copy_from(self, source);
        settle(self);
      },
      [=](caf::error& err) {
        // At the clock already (its hand-over holds the rest), or gone (a rollback follows):
        // this shard copies no more.
        auto& st = self->state;
        if (st.copy.generation != generation) return;
        if (!is_error(err, errc::checkpoint_clock_passed))
          log_line(log_level::warn, "chief",
                   "shard " + std::to_string(source) + " copies no more ahead: " + describe(err));
        --st.copy.in_flight;
        settle(self);
      });
}

} // namespace

int64_t copy_ahead_lead(self_ptr self, int32_t shards) {
  const auto& st = self->state;
  if (shards <= 0 || shards == st.cfg.spec.shards || st.cfg.spec.model.sparse_tables.empty()
      || !copy_ahead_wanted(self, shards))
    return 0;
  const auto now = st.global_clock();
  const double rate = st.elapsed() > 0 ? static_cast<double>(now) / st.elapsed() : 0.0;
  return std::max(copy_lead_clocks, static_cast<int64_t>(std::ceil(rate * copy_lead_s)));
}

void maybe_copy_ahead(self_ptr self) {
  auto& st = self->state;
  if (st.phase != run_phase::training || !st.resize_asked
      || st.copy.generation == st.resize_generation || !st.failing_over.empty()
      || st.resizes_done >= st.cfg.resizes.size() || st.cfg.spec.model.sparse_tables.empty())
    return;
  const auto& planned = st.cfg.resizes[st.resizes_done];
  const auto lead = copy_ahead_lead(self, planned.shards);
  const auto now = st.global_clock();
  if (lead == 0 || now + lead < planned.at_clock || now >= planned.at_clock) return;
  // A distributed run copies to the spare ps tasks the change will take: all must be waiting.
  if (st.cfg.remote && !missing_spares(st, st.cfg.spec.shards, planned.shards).empty()) return;
  train_spec after;
  try {
    after = resized_spec(st.cfg.spec, planned.shards);
  } catch (const std::invalid_argument&) {
    return;  // the change itself says why
  }
  end_copy_ahead(self);
  auto& c = st.copy;
  c.generation = st.resize_generation;
  c.clock = planned.at_clock;
  c.from_clock = now;
  c.to = planned.shards;
  c.placement = std::move(after.bucket_shards);
  c.staged.assign(static_cast<std::size_t>(std::max<int32_t>(c.to, st.cfg.spec.shards)), {});
  for (int32_t s = st.cfg.spec.shards; s < c.to; ++s) {
    ps_shard_actor shard;
    if (st.cfg.remote) {
      shard = st.spares.at(s).shard;  // monitored since it joined
    } else {
      shard = spawn_ps_shard(self->system(), s, {st.cfg.checkpoints.dir, st.cfg.bounds});
      self->monitor(shard);
    }
    c.arriving.push_back(shard);
    c.arrived_lost.push_back(false);
  }
  c.began = std::chrono::steady_clock::now();
  log_line("chief", "copying ahead the rows the resize at clock " + std::to_string(c.clock)
                      + " moves (at clock " + std::to_string(now) + ")");
  for (std::size_t s = 0; s < st.shards.size(); ++s) copy_from(self, s);
}

bool copy_ahead_in_flight(const chief_state& st) {
  return st.copy.generation != 0 && st.copy.in_flight > 0;
}

ps_shard_actor take_arriving_shard(self_ptr self, int32_t s) {
  auto& c = self->state.copy;
  const auto at = static_cast<std::size_t>(s - self->state.cfg.spec.shards);
  if (c.generation == 0 || at >= c.arriving.size() || c.arrived_lost[at]) return {};
  return std::exchange(c.arriving[at], ps_shard_actor{});
}

void end_copy_ahead(self_ptr self) {
  auto& st = self->state;
  auto& c = st.copy;
  if (c.generation == 0) return;
  const auto forget = [&](const ps_shard_actor& shard) {
    self->request(shard, st.cfg.request_timeout, resize_atom::value, copy_atom::value, c.clock,
                  std::vector<uint16_t>{}, uint64_t{0})
      .then([](bool, const std::vector<wire_buffer>&) {}, [](const caf::error&) {});
  };
  for (auto& shard : c.arriving) {
    if (!shard) continue;
    if (st.cfg.remote) {  // a spare ps task's: it waits on, without the copies
      forget(shard);
      continue;
    }
    self->demonitor(shard.address());
    self->send_exit(shard, caf::exit_reason::user_shutdown);
  }
  // Every old shard forgets what it copied and what it kept aside, before anything it is asked
  // next (a hand-over at that clock is then whole). One lost meanwhile forgot with its tables.
  for (const auto& shard : st.shards)
    if (shard) forget(shard);
  c = chief_state::copy_ahead_run{};
}

void clear_copy_ahead(self_ptr self) {
  self->state.copy = chief_state::copy_ahead_run{};
}

bool arriving_shard_down(self_ptr self, const caf::down_msg& dm) {
  auto& c = self->state.copy;
  for (std::size_t i = 0; i < c.arriving.size(); ++i)
    if (c.arriving[i] && c.arriving[i].address() == dm.source) {
      c.arriving[i] = nullptr;
      c.arrived_lost[i] = true;
      const auto shard = std::to_string(self->state.shards.size() + i);
      log_line(log_level::warn, "chief",
               self->state.cfg.remote
                 ? "the spare ps:" + shard + ", copied to ahead of the resize at clock "
                     + std::to_string(c.clock) + ", was lost; the spare that takes its place "
                     "is given its copies"
                 : "shard " + shard + ", spawned for the resize at clock "
                     + std::to_string(c.clock) + ", was lost; the one the resize spawns is "
                     "given its copies");
      return true;
    }
  return false;
}

} // namespace actorps::chief_detail
