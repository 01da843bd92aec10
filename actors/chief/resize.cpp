// A change of the number of shards or workers while a run trains (--resize ps=N@clock=C,
// workers=M@clock=C or both), one step per function, each going on to the next once its work is
// done:
//
//   arm_next_resize   training: every shard is asked, ahead of it, for its hand-over at clock C
//                     under the new placement (each holds the request until its clock reaches
//                     C): its dense blocks and the rows (with optimizer state, touches, clocks)
//                     and pending counts of the keys whose bucket goes to another shard, split
//                     by that shard; every
//                     worker pauses before computing clock C (worker_config::pause_at; across
//                     processes told by message first: worker_pause.cpp), so in every mode that
//                     state holds exactly the pushes of the clocks before C
//   checkpoints_then_resize  every hand-over is in hand: a checkpoint due by C is written first,
//                     from the states the shards keep of it under the old placement
//   begin_resize      the phase is resizing; the workers (but below) and the evaluator are
//                     stopped (under new incarnations: a push still on its way is refused), the
//                     shards beyond N stop (everything they held is in their hand-overs), shards
//                     up to N are spawned (distributed: spare ps tasks' shards are taken in,
//                     spare_tasks.cpp, and spare worker tasks for new workers,
//                     spare_workers.cpp), and a resize episode, an actor of its own
//                     (resize_episode.cpp draws its steps: decoding -> cutting -> moving -> done
//                     | failed), cuts the dense hand-overs for the new placement and has every
//                     shard of the new size take its part and the rows handed to it: the rows
//                     of the buckets a shard keeps stay where they are, the moving ones come as
//                     their old shard split them, addressed to it
//   finish_resize     every worker starts again at clock C (its data where it was then; after a
//                     change of workers, its share of what no worker had trained: data_plan.hpp)
//                     and the evaluator on the new shards; training resumes, the next change is
//                     asked. A change of shards only, in one process, stops no worker: each,
//                     paused at C, is told the new shards (resize_worker) and pulls C's
//                     parameters again from them, its data reader where it was
//
// The new placement follows from the old one and N alone (placement_change.hpp: the fewest
// buckets and dense blocks move), and the spec records it, so that every role, checkpoint and
// export cuts the model as the shards hold it. Nothing is applied twice or lost: no worker
// pushes clock C before the hand-overs are taken, each starts again at C where its data was,
// and the next checkpoint is a full one.
//
// A shard the resize spawned that is lost while the parts move held nothing before: it is
// spawned again and given its part again (resize_shard_lost). A shard of the old size lost then
// takes with it the rows of the buckets it kept: the run goes back to the newest checkpoint, as
// after any lost shard (rollback.cpp; the change is made by restoring it at the new size). A
// rollback begun before the hand-overs are in hand asks for them again once it has resumed.
//
// In one process the rows a change of shards moves are copied ahead while the run trains
// (copy_ahead.cpp): each new shard holds its copies before C, and the hand-overs at C hold only
// the rows changed or never copied since and the copied keys that went, so that the stop at C
// takes in what changed, not every moving row. Across processes the rows still move at C.
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"
#include "actors/protocol/placement_change.hpp"
#include "actors/roles/ps_shard.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>

namespace actorps::chief_detail {

namespace {

/// "from 2 to 3 shards", "from 2 to 4 workers", or both.
std::string resize_text(const chief_state::resize_run& r) {
  std::string out;
  if (r.to != r.from)
    out = "from " + std::to_string(r.from) + " to " + std::to_string(r.to) + " shards";
  if (r.workers_to != r.workers_from)
    out += (out.empty() ? "from " : " and from ") + std::to_string(r.workers_from) + " to "
           + std::to_string(r.workers_to) + " workers";
  return out.empty() ? "to the same size" : out;
}

void finish_resize(self_ptr self, uint64_t bytes, double cut_ms, double move_ms) {
  auto& st = self->state;
  st.resizing = nullptr;
  st.resize.states.clear();
  st.chain = {};  // the chain's links hold the old placement: the next checkpoint is full
  st.chain_deltas = 0;
  const auto generation = st.resize_generation;
  const auto clock = st.resize.clock;
  restart_roles_at(
    self, clock,
    [=](int64_t retrained) {
    auto& st = self->state;
    if (st.phase != run_phase::resizing || st.resize_generation != generation) return;
    enter(self, run_phase::training);
    for (const auto& [s, when] : st.resize.lost)  // restored with the others: no clock lost
      record_recovery(self, ps_role(s), when, clock, {});
    build_missing_standbys(self, true);  // --replicas 1: every shard of the new size
    for (auto& w : st.workers)
      if (w) self->send(w, start_atom::value);
    const auto& r = st.resize;
    const double ms = ms_since(r.frozen);
    char text[200];
    std::snprintf(text, sizeof text,
                  " at clock %lld in %.1f ms: %zu buckets and %zu dense blocks moved (%llu bytes)"
                  "%s",
                  static_cast<long long>(clock), ms, r.buckets, r.blocks,
                  static_cast<unsigned long long>(bytes),
                  r.keeps_workers ? (", " + std::to_string(r.kept) + " workers kept").c_str() : "");
    log_line("chief", "resized " + resize_text(r) + text);
    st.metrics->write(json_object().add("event", "resize").add("from", r.from).add("to", r.to)
                        .add("workers_from", r.workers_from).add("workers_to", r.workers_to)
                        .add("buckets", static_cast<uint64_t>(r.buckets))
                        .add("blocks", static_cast<uint64_t>(r.blocks)).add("bytes", bytes)
                        .add("handed_over_bytes", r.handed_over)
                        .add("freeze_ms", ms).add("cut_ms", cut_ms)
                        .add("move_ms", move_ms).add("clock", clock)
                        .add("shards_lost", static_cast<uint64_t>(r.lost.size()))
                        .add("retrained_samples", retrained * st.cfg.batch)
                        .add("workers_kept", static_cast<uint64_t>(r.kept))
                        .add("copied_ahead_bytes", r.copied)
                        .add("copies_ahead", r.copies).add("copy_ms", r.copy_ms)
                        .add("copy_from_clock", r.copy_from)
                        .add("unreported_batches", r.unreported)
                        .add("wall_s", st.elapsed()));
    st.metrics->flush();
    answer_scale_request(self);  // actorps scale: done
    arm_next_resize(self);
    check_all_done(self);
    },
    st.resize.keeps_workers);
}

/// An episode cuts the states in hand for the shards of the new size and restores each of them.
void run_resize_episode(self_ptr self) {
  auto& st = self->state;
  resize_plan plan;
  plan.after = st.cfg.spec;
  for (const auto& files : st.resize.states) {  // shares the bytes
    plan.states.push_back(files.front());
    for (std::size_t s = 1; s < files.size(); ++s)
      if (files[s].size_bytes() > 0) {
        if (plan.rows.size() < s) plan.rows.resize(s);
        plan.rows[s - 1].push_back(files[s]);
      }
  }
  if (plan.rows.size() > st.shards.size())  // rows for a shard the run does not have
    return fail_run(self, "resizing the shards failed",
                    caf::make_error(caf::sec::runtime_error,
                                    "a hand-over holds rows for shard "
                                      + std::to_string(plan.rows.size() - 1) + " of "
                                      + std::to_string(st.shards.size())));
  plan.rows.resize(st.shards.size());
  // The rows copied ahead: each shard holds its copies already, but one spawned since the
  // shard spawned for the copy was lost (given them before its part).
  auto& c = st.copy;
  if (c.generation == st.resize_generation && c.generation != 0) {
    plan.copied = std::move(c.staged);
    st.resize.copied = c.bytes;
    st.resize.copies = c.chunks;
    st.resize.copy_ms = std::chrono::duration<double, std::milli>(c.ended - c.began).count();
    st.resize.copy_from = c.from_clock;
    plan.copy_again.assign(st.shards.size(), false);
    for (std::size_t i = 0; i < c.arrived_lost.size(); ++i)
      if (c.arrived_lost[i] && st.resize.from + i < plan.copy_again.size())
        plan.copy_again[st.resize.from + i] = true;
    clear_copy_ahead(self);
  } else {
    end_copy_ahead(self);  // none, or an earlier change's
  }
  plan.copied.resize(st.shards.size());
  plan.copy_again.resize(st.shards.size(), false);
  plan.shards = st.shards;
  plan.incarnations = st.incarnation;
  plan.request_timeout = st.cfg.request_timeout;
  auto episode = st.resizing = spawn_resize_episode(
    self->system(), caf::actor_cast<caf::actor>(self), std::move(plan));
  self->request(episode, caf::infinite, resize_atom::value)
    .then(
      [=](uint64_t bytes, double cut_ms, double move_ms) {
        if (self->state.resizing == episode) finish_resize(self, bytes, cut_ms, move_ms);
      },
      [=](caf::error& err) {
        if (self->state.resizing != episode) return;  // aborted: the run ended, or restarted
        self->state.resizing = nullptr;
        fail_run(self, "resizing the shards failed", err);
      });
}

/// A change of the number of workers: every minibatch no worker has trained by `clock` is
/// shared out among `workers` in contiguous shares (data_plan.hpp), each worker of the new
/// number starting at `clock` at the start of its share. The workers are stopped.
void share_out_data(chief_state& st, int32_t workers, int64_t clock) {
  const auto before = static_cast<int32_t>(st.workers.size());
  for (const auto& [w, batches] : st.unreported) st.resize.unreported += batches;
  st.unreported.clear();
  std::vector<data_plan> rest;
  for (int32_t w = 0; w < before; ++w) {
    const auto at = std::min(st.batches_at(w, clock), st.batches_planned(w));
    st.batches_before_plans += at;
    rest.push_back(plan_from(st.plans.empty() ? own_part(w, before, st.cfg.steps) : st.plans[w],
                             at));
  }
  st.plans = share_out(rest, workers);
  st.plans_from = clock;
  int64_t longest = 0;
  for (const auto& p : st.plans) longest = std::max(longest, plan_batches(p));
  st.cfg.steps = clock + longest;  // the clock the run ends at now
  st.cfg.spec.workers = workers;
  const auto n = static_cast<std::size_t>(workers);
  st.workers.resize(n);
  st.clocks.assign(n, clock);
  st.live.assign(n, true);
  st.done.assign(n, false);
  st.released.assign(n, false);
  st.last_loss.resize(n, 0.0);
  st.replacements.resize(n, 0);
  while (st.incarnation.size() < n) st.incarnation.push_back(st.next_incarnation++);
  st.incarnation.resize(n);
  constexpr auto no_end = std::numeric_limits<int64_t>::max();
  st.data_spans.assign(n, {chief_state::data_span{clock, no_end, clock}});
}

void begin_resize(self_ptr self, std::vector<std::vector<wire_buffer>> states) {
  auto& st = self->state;
  const auto planned = st.cfg.resizes[st.resizes_done++];
  st.resize_asked = false;
  const auto shards = planned.shards > 0 ? planned.shards : st.cfg.spec.shards;
  const auto workers = planned.workers > 0 ? planned.workers : st.cfg.spec.workers;
  if (!resize_can_begin(self, shards, workers)) {
    end_copy_ahead(self);
    if (st.cfg.remote) release_paused_workers(self);
    return arm_next_resize(self);
  }
  if (st.copy.failed)  // a copy the hand-overs count on was not taken
    return fail_run(self, "resizing the shards failed", st.copy.failed);
  train_spec after;
  std::vector<placement_move> moves;
  try {
    after = resized_spec(st.cfg.spec, shards);
    moves = placement_moves(st.cfg.spec, after);
  } catch (const std::invalid_argument& e) {
    return fail_run(self, "resizing the shards failed",
                    caf::make_error(caf::sec::runtime_error, e.what()));
  }
  auto& r = st.resize;
  r = {st.cfg.spec.shards, shards, st.cfg.spec.workers, workers, planned.at_clock, 0, 0,
       std::chrono::steady_clock::now(), std::move(states), 0, false, 0, {}};
  for (const auto& files : r.states)
    for (const auto& h : files) r.handed_over += h.size_bytes();
  for (const auto& m : moves) {
    r.buckets += m.buckets.size();
    r.blocks += m.blocks.size();
  }
  log_line("chief", "resizing at clock " + std::to_string(r.clock) + " " + resize_text(r) + ": "
                      + std::to_string(r.buckets) + " buckets and " + std::to_string(r.blocks)
                      + " dense blocks change shard");
  enter(self, run_phase::resizing);
  // A change of shards only: the workers, paused at the clock, stay and take the new shards
  // where they are (their data readers would otherwise read up to there again; in another
  // process each would load its data and reach the shards afresh).
  r.keeps_workers = r.workers_to == r.workers_from;
  stop_roles(self, r.keeps_workers);
  drop_standbys(self);  // they hold the old placement's states; built again for the new one
  if (r.workers_to != r.workers_from) {
    if (st.cfg.remote) take_spare_workers(self, r.workers_from, r.workers_to);
    share_out_data(st, r.workers_to, r.clock);
    // a minibatch teaches as much as before: the rate per minibatch and the schedule's place
    // follow the minibatches trained, not the clocks (train_spec::lr_workers)
    if (after.lr_workers == 0) after.lr_workers = r.workers_from;
    after.schedule_from = r.clock;
    after.schedule_batches = st.batches_before_plans;
  }
  after.workers = r.workers_to;
  // The shards that leave stop (their state is in hand); those of the new size beyond the old
  // are spawned here, empty until the episode restores them (distributed: spare ps tasks'
  // shards, spare_tasks.cpp).
  if (st.cfg.remote) {
    take_spares(self, r.from, r.to);
  } else {
    for (int32_t s = r.to; s < r.from; ++s) {
      self->demonitor(st.shards[s].address());
      self->send_exit(st.shards[s], caf::exit_reason::user_shutdown);
    }
    st.shards.resize(static_cast<std::size_t>(r.to));
    for (int32_t s = r.from; s < r.to; ++s) {
      if (auto arriving = take_arriving_shard(self, s)) st.shards[s] = std::move(arriving);
      else spawn_local_shard(self, s);
    }
  }
  st.cfg.spec = std::move(after);
  run_resize_episode(self);
  // Fault injection: a shard killed while the states are restored (--kill ps:I@resize=K).
  for (int32_t i = 0; i < static_cast<int32_t>(st.cfg.kills.size()); ++i)
    if (st.cfg.kills[i].at_resize == static_cast<int32_t>(st.resizes_done)) run_kill(self, i);
}

} // namespace

namespace {

/// The checkpoints due by `clock` are written first: the shards keep their states at those
/// clocks under the old placement, and once they are restored for the new one they keep none of
/// them (the checkpoint at the change's own clock would be lost). Then the change begins.
void checkpoints_then_resize(self_ptr self, int64_t clock, uint64_t generation,
                             std::shared_ptr<std::vector<std::vector<wire_buffer>>> states) {
  auto& st = self->state;
  // The states at `clock` show that every worker pushed every clock before it; their reports of
  // those clocks, by which a checkpoint comes due, may still be on their way.
  for (std::size_t w = 0; w < st.clocks.size(); ++w)
    if (st.live[w]) st.clocks[w] = std::max(st.clocks[w], clock);
  maybe_checkpoint(self);
  if (!st.checkpoint_in_flight) {
    if (!copy_ahead_in_flight(st)) return begin_resize(self, std::move(*states));
    st.copy.held_states = states;  // begins once the last copy is taken (begin_held_resize)
    return;
  }
  st.after_checkpoint = [=, before = std::move(st.after_checkpoint)] {
    if (before) before();  // a stop on a signal, say: it ends the phase, and the change with it
    auto& st = self->state;
    if (st.resize_generation != generation || st.phase != run_phase::training) return;
    checkpoints_then_resize(self, clock, generation, states);
  };
}

/// Every shard is asked for its hand-over at `clock` (the next resize's) under the placement of
/// the size it plans, which it holds until it reaches that clock.
void ask_states_at(self_ptr self, int64_t clock, uint64_t generation) {
  auto& st = self->state;
  const auto& planned = st.cfg.resizes[st.resizes_done];
  // Where the change puts each bucket and each dense block (a change of workers alone: every
  // bucket where it is, no block moves).
  std::vector<uint16_t> placement = st.cfg.spec.bucket_shards, blocks;
  try {
    if (planned.shards > 0) {
      auto after = resized_spec(st.cfg.spec, planned.shards);
      placement = std::move(after.bucket_shards);
      blocks = std::move(after.block_shards);
    }
  } catch (const std::invalid_argument& e) {
    return fail_run(self, "resizing the shards failed",
                    caf::make_error(caf::sec::runtime_error, e.what()));
  }
  ask_each<std::vector<wire_buffer>>(
    st.shards.size(),
    [&](std::size_t s) {  // held by each shard until it reaches the clock: no timeout
      return self->request(st.shards[s], caf::infinite, resize_atom::value, clock, placement,
                           blocks);
    },
    [=](std::vector<std::vector<wire_buffer>> states) {
      auto& st = self->state;
      if (st.resize_generation != generation || st.phase != run_phase::training) return;
      for (const auto& files : states)
        if (files.empty())
          return fail_run(self, "resizing the shards failed",
                          caf::make_error(caf::sec::runtime_error, "an empty hand-over"));
      checkpoints_then_resize(
        self, clock, generation,
        std::make_shared<std::vector<std::vector<wire_buffer>>>(std::move(states)));
    },
    [=](caf::error& err) {
      auto& st = self->state;
      if (st.resize_generation != generation || st.phase != run_phase::training) return;
      st.resize_asked = false;
      if (is_error(err, errc::checkpoint_clock_passed)) {  // resumed past it, say
        if (ask_scale_later(self)) return arm_next_resize(self);  // actorps scale: further on
        end_copy_ahead(self);
        const auto& planned = st.cfg.resizes[st.resizes_done++];
        log_line(log_level::warn, "chief",
                 "resize " + to_string(planned) + " skipped: the shards are past that clock");
        if (st.cfg.remote) release_paused_workers(self);
        return arm_next_resize(self);
      }
      fail_run(self, "asking the shards for their hand-over at clock " + std::to_string(clock),
               err);
    });
}

} // namespace

void arm_next_resize(self_ptr self) {
  auto& st = self->state;
  if (st.phase != run_phase::training || st.resize_asked || !st.failing_over.empty()
      || st.resizes_done >= st.cfg.resizes.size())
    return;
  const auto clock = st.cfg.resizes[st.resizes_done].at_clock;
  st.resize_asked = true;
  const auto generation = ++st.resize_generation;
  if (!st.cfg.remote) return ask_states_at(self, clock, generation);  // paused where started
  // Across processes the workers learn the clock now; it may move later (worker_pause.cpp).
  pause_workers_at(self, clock, [=](int64_t at) {
    auto& st = self->state;
    if (st.resize_generation != generation || st.phase != run_phase::training) return;
    st.cfg.resizes[st.resizes_done].at_clock = at;
    ask_states_at(self, at, generation);
  });
}

void resize_shard_lost(self_ptr self, int32_t s, const caf::down_msg& dm) {
  auto& st = self->state;
  auto& r = st.resize;
  r.lost.emplace_back(s, std::chrono::steady_clock::now());
  record_failure(self, ps_role(s), loss_reason(st, ps_role(s), dm.reason),
                 "spawned again and given its part of the resize at clock "
                   + std::to_string(r.clock) + " again");
  spawn_local_shard(self, s);
  self->send(st.resizing, resize_atom::value, s, st.shards[static_cast<std::size_t>(s)]);
}

bool resize_can_replace(const chief_state& st, int32_t s) {
  return st.phase == run_phase::resizing && !st.cfg.remote && st.resizing && s >= st.resize.from;
}

int64_t next_resize_clock(const chief_state& st, int64_t start_clock) {
  for (auto i = st.resizes_done; i < st.cfg.resizes.size(); ++i)
    if (st.cfg.resizes[i].at_clock >= start_clock) return st.cfg.resizes[i].at_clock;
  return -1;
}

void begin_held_resize(self_ptr self) {
  auto& st = self->state;
  auto states = std::exchange(st.copy.held_states, nullptr);
  if (states && st.phase == run_phase::training && st.copy.generation == st.resize_generation)
    begin_resize(self, std::move(*states));
}

void abort_resize(self_ptr self) {
  auto& st = self->state;
  end_copy_ahead(self);
  ++st.resize_generation;
  st.resize_asked = false;
  if (auto episode = std::exchange(st.resizing, nullptr))
    self->send_exit(episode, caf::exit_reason::kill);
}

void report_unfired_resizes(self_ptr self) {
  auto& st = self->state;
  for (; st.resizes_done < st.cfg.resizes.size(); ++st.resizes_done) {
    const auto& planned = st.cfg.resizes[st.resizes_done];
    auto what = to_string(planned);
    log_line("chief", "planned resize " + what + " never happened (the run ended at clock "
                        + std::to_string(st.global_clock()) + ")");
    st.metrics->write(json_object().add("event", "resize_not_done").add("resize", what)
                        .add("clock", st.global_clock()).add("wall_s", st.elapsed()));
  }
}

} // namespace actorps::chief_detail

namespace actorps {

std::string to_string(const planned_resize& r) {
  std::string out;
  if (r.shards != 0 || r.workers == 0) out = "ps=" + std::to_string(r.shards);
  if (r.workers != 0) out += (out.empty() ? "" : ",") + std::string("workers=")
                             + std::to_string(r.workers);
  return out + "@clock=" + std::to_string(r.at_clock);
}

std::string resize_refusal(const chief_config& cfg) {
  for (const auto& k : cfg.kills) {
    if (k.at_resize < 0) continue;
    const auto what = "--kill " + role_id{k.target, k.index}.text() + "@resize="
                      + std::to_string(k.at_resize) + ": ";
    if (k.target != role_kind::ps) return what + "only a shard is killed at a resize";
    if (k.at_resize < 1 || static_cast<std::size_t>(k.at_resize) > cfg.resizes.size())
      return what + "there are " + std::to_string(cfg.resizes.size()) + " resizes";
    auto shards = cfg.spec.shards;  // after that resize
    for (int32_t i = 0; i < k.at_resize; ++i)
      if (cfg.resizes[static_cast<std::size_t>(i)].shards > 0)
        shards = cfg.resizes[static_cast<std::size_t>(i)].shards;
    if (k.index >= shards)
      return what + "that resize leaves " + std::to_string(shards) + " shards";
  }
  if (cfg.resizes.empty()) return "";
  if (cfg.remote)
    return "--resize is planned in one process only (simulate, train()); a distributed run is "
           "resized while it trains by actorps scale";
  if (cfg.source.follow) return "not while following a stream (--follow)";
  int64_t last = 0;
  for (const auto& r : cfg.resizes) {
    auto what = to_string(r) + ": ";
    if (r.shards < 0 || r.workers < 0 || (r.shards == 0 && r.workers == 0))
      return what + "expected ps=N, workers=N or both";
    if (r.shards > max_shards)
      return what + "the number of shards is 1 to " + std::to_string(max_shards);
    if (r.workers > max_workers)
      return what + "the number of workers is 1 to " + std::to_string(max_workers);
    if (!cfg.spec.bucket_shards.empty()
        && static_cast<std::size_t>(r.shards) > cfg.spec.bucket_shards.size())
      return what + "more shards than the " + std::to_string(cfg.spec.bucket_shards.size())
             + " buckets of the sparse keys";
    if (r.workers > 0 && !cfg.checkpoints.dir.empty() && !cfg.checkpoints.files.empty())
      return what + "not with --checkpoint-dir over a directory read as a stream (a "
                    "checkpoint holds each worker's own file position)";
    if (r.at_clock < 1 || r.at_clock >= cfg.steps)
      return what + "the clock is 1 to " + std::to_string(cfg.steps - 1)
             + " (within the run's clocks)";
    if (r.at_clock <= last) return what + "each resize's clock is after the one before";
    last = r.at_clock;
  }
  return "";
}

} // namespace actorps
