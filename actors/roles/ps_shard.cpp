#include "actors/roles/ps_shard.hpp"

#include "actors/storage/checkpoint_io.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "actors/protocol/log.hpp"
#include "kernels/optimizer.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

namespace actorps {

namespace {

struct held_pull {
  int32_t worker;
  int64_t clock;
  caf::typed_response_promise<wire_buffer> promise;
};

struct held_checkpoint {
  std::string dir;
  int64_t clock;
  caf::typed_response_promise<file_record> promise;
};

struct ps_shard_state {
  static inline const char* name = "ps_shard";

  int32_t shard = -1;
  train_spec spec;
  std::unique_ptr<block_layout> layout;
  std::vector<float> params;        // the shard's blocks, contiguous in block-id order
  std::vector<float> opt_state;     // per block: slots × block size, at slots × shard_offset
  std::size_t slots = 0;

  std::vector<int64_t> clocks;      // finished clocks per worker
  std::vector<bool> live;
  std::vector<uint32_t> incarnation;  // per worker: the spawn whose pushes are accepted
  int64_t min_clock = 0;
  int64_t newest_clock = -1;

  // sync mode: each worker's gradient for the clock being accumulated
  std::vector<std::vector<float>> sync_grads;
  std::vector<bool> sync_pushed;
  std::vector<float> sync_sum;

  std::vector<held_pull> held;
  std::vector<uint8_t> seen;        // scratch for push validation

  // checkpoints: the state when min clock reached each checkpoint clock (the last two), and
  // the chief's requests for one not reached yet
  std::map<int64_t, wire_buffer> snapshots;
  std::vector<held_checkpoint> held_checkpoints;
  checkpoint_io_actor io;           // spawned on the first checkpoint
  shard_stats stats;

  wire_buffer cached_reply;         // pull reply for the current values, shared by every reader
  uint64_t cached_updates = std::numeric_limits<uint64_t>::max();
  int64_t cached_min_clock = -1;

  bool initialized() const { return layout != nullptr; }
  std::string who() const { return "ps:" + std::to_string(shard); }
};

using self_ptr = ps_shard_actor::stateful_pointer<ps_shard_state>;

constexpr int64_t no_live_workers = std::numeric_limits<int64_t>::max();

void recompute_min(ps_shard_state& st) {
  int64_t min = no_live_workers;
  for (std::size_t w = 0; w < st.clocks.size(); ++w)
    if (st.live[w]) min = std::min(min, st.clocks[w]);
  st.min_clock = min;
}

/// Where the run is at this shard: the min clock, or with no live worker the furthest any got.
int64_t progress_clock(const ps_shard_state& st) {
  if (st.min_clock != no_live_workers) return st.min_clock;
  return st.clocks.empty() ? 0 : *std::max_element(st.clocks.begin(), st.clocks.end());
}

bool allowed(const ps_shard_state& st, int64_t clock) {
  auto bound = st.spec.staleness_bound();
  return bound < 0 || st.min_clock >= clock - bound;
}

const wire_buffer& current_reply(ps_shard_state& st) {
  if (st.cached_updates != st.stats.updates || st.cached_min_clock != st.min_clock
      || st.cached_reply.size_words() == 0) {
    st.cached_reply = encode_shard_parameters(parameters_kind::pull, st.shard, st.min_clock,
                                              st.newest_clock, st.stats.updates, *st.layout,
                                              st.params.data());
    st.cached_updates = st.stats.updates;
    st.cached_min_clock = st.min_clock;
  }
  return st.cached_reply;
}

void record_reply(ps_shard_state& st, int64_t clock) {
  ++st.stats.pulls_served;
  if (st.min_clock != no_live_workers)
    st.stats.max_staleness = std::max(st.stats.max_staleness, clock - st.min_clock);
}

/// Delivers every held pull the rule now allows, in arrival order.
void release_held(ps_shard_state& st) {
  auto keep = st.held.begin();
  for (auto& h : st.held) {
    if (allowed(st, h.clock)) {
      record_reply(st, h.clock);
      h.promise.deliver(current_reply(st));
    } else {
      *keep++ = std::move(h);
    }
  }
  st.held.erase(keep, st.held.end());
}

caf::result<wire_buffer> serve_pull(self_ptr self, int32_t worker, int64_t clock) {
  auto& st = self->state;
  if (allowed(st, clock)) {
    record_reply(st, clock);
    return current_reply(st);
  }
  ++st.stats.pulls_held;
  auto promise = self->make_response_promise<wire_buffer>();
  st.held.push_back({worker, clock, promise});
  return promise;
}

caf::error drop(ps_shard_state& st, const std::string& what, caf::error err) {
  ++st.stats.dropped;
  log_line(st.who(), "dropped " + what + ": " + describe(err));
  return err;
}

/// Checks a decoded push against the spec and the clock table; returns the error to drop it with.
caf::error validate(ps_shard_state& st, const push_view& push) {
  if (push.shard != st.shard)
    return make_error(errc::wrong_shard, "addressed to shard " + std::to_string(push.shard));
  if (push.worker < 0 || push.worker >= static_cast<int32_t>(st.clocks.size())
      || !st.live[push.worker])
    return make_error(errc::unknown_worker, "worker " + std::to_string(push.worker));
  if (push.incarnation != st.incarnation[push.worker])
    return make_error(errc::stale_clock, "from incarnation " + std::to_string(push.incarnation)
                                           + " of worker " + std::to_string(push.worker)
                                           + ", which was replaced");
  auto expected = st.clocks[push.worker];
  if (push.clock > expected)
    return make_error(errc::future_clock, "clock " + std::to_string(push.clock)
                                            + ", worker is at " + std::to_string(expected));
  if (push.clock < expected)
    return make_error(errc::stale_clock, "clock " + std::to_string(push.clock)
                                           + " already pushed");
  const auto& ids = st.layout->shard_blocks(st.shard);
  if (push.blocks.size() != ids.size())
    return make_error(errc::missing_block, std::to_string(push.blocks.size()) + " blocks, expected "
                                             + std::to_string(ids.size()));
  std::fill(st.seen.begin(), st.seen.end(), 0);
  const auto& all = st.layout->blocks();
  for (const auto& b : push.blocks) {
    if (b.id >= all.size() || all[b.id].shard != st.shard)
      return make_error(errc::unknown_block, "block " + std::to_string(b.id));
    if (b.count != all[b.id].size)
      return make_error(errc::wrong_element_count,
                        "block " + std::to_string(b.id) + " has " + std::to_string(b.count)
                          + " floats, expected " + std::to_string(all[b.id].size));
    auto index = std::lower_bound(ids.begin(), ids.end(), b.id) - ids.begin();
    if (st.seen[index]++)
      return make_error(errc::missing_block, "block " + std::to_string(b.id) + " twice");
    if (!all_finite(b.values, b.count))
      return make_error(errc::non_finite_value, "block " + std::to_string(b.id));
  }
  return caf::none;
}

void apply_block(ps_shard_state& st, const block_info& b, const float* grad, float lr) {
  apply_update(st.spec.optimizer, lr, static_cast<int64_t>(st.stats.updates),
               st.params.data() + b.shard_offset, grad,
               st.opt_state.data() + st.slots * b.shard_offset, b.size);
}

/// The configured rate at global clock `clock`, after the run's schedule.
float rate_at(const ps_shard_state& st, int64_t clock) {
  return scheduled_learning_rate(st.spec.schedule, st.spec.optimizer.learning_rate, clock,
                                 st.spec.total_clocks);
}

std::size_t live_workers(const ps_shard_state& st) {
  return static_cast<std::size_t>(std::count(st.live.begin(), st.live.end(), true));
}

/// Sync mode: once no live worker still owes a gradient for the clock being accumulated (the
/// one the pushers pushed), applies the mean of the live pushers' gradients once. A replacement
/// admitted at a later clock owes nothing for this one.
void maybe_apply_sync(ps_shard_state& st) {
  int64_t clock = -1;
  std::size_t pushers = 0;
  for (std::size_t w = 0; w < st.live.size(); ++w)
    if (st.live[w] && st.sync_pushed[w]) clock = st.clocks[w] - 1, ++pushers;
  if (pushers == 0 || st.min_clock <= clock) return;
  auto& sum = st.sync_sum;
  bool first = true;
  for (std::size_t w = 0; w < st.live.size(); ++w) {  // worker order: arrival order never matters
    if (!st.live[w] || !st.sync_pushed[w]) continue;
    const auto& g = st.sync_grads[w];
    if (first) {
      std::copy(g.begin(), g.end(), sum.begin());
      first = false;
    } else {
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
    }
  }
  auto inv = 1.0f / static_cast<float>(pushers);
  for (auto& v : sum) v *= inv;
  ++st.stats.updates;
  for (auto id : st.layout->shard_blocks(st.shard)) {
    const auto& b = st.layout->blocks()[id];
    apply_block(st, b, sum.data() + b.shard_offset, rate_at(st, clock));
  }
  std::fill(st.sync_pushed.begin(), st.sync_pushed.end(), false);
}

void accept_push(ps_shard_state& st, const push_view& push) {
  const auto& all = st.layout->blocks();
  if (st.spec.mode == consistency::sync) {
    auto& slot = st.sync_grads[push.worker];
    for (const auto& b : push.blocks)
      std::memcpy(slot.data() + all[b.id].shard_offset, b.values, b.count * sizeof(float));
    st.sync_pushed[push.worker] = true;
  } else {
    ++st.stats.updates;
    auto lr = rate_at(st, st.min_clock) / static_cast<float>(live_workers(st));
    for (const auto& b : push.blocks) apply_block(st, all[b.id], b.values, lr);
  }
  ++st.stats.pushes;
  st.clocks[push.worker] = push.clock + 1;
  st.newest_clock = std::max(st.newest_clock, push.clock);
  recompute_min(st);
  if (st.spec.mode == consistency::sync) maybe_apply_sync(st);
}

/// Answers every held pull and checkpoint with `err` (the state they waited for is gone).
void fail_held(ps_shard_state& st, const caf::error& err) {
  for (auto& h : st.held) h.promise.deliver(err);
  st.held.clear();
  for (auto& h : st.held_checkpoints) h.promise.deliver(err);
  st.held_checkpoints.clear();
}

/// Replaces the whole state: the run's spec, values and optimizer state, every worker live at
/// `clock`. init (clock 0, fresh state) and restore (a checkpoint) both end here.
void install(ps_shard_state& st, const train_spec& spec, std::unique_ptr<block_layout> layout,
             std::vector<float> params, std::vector<float> opt_state, int64_t clock,
             uint64_t updates, int64_t newest_clock, std::vector<uint32_t> incarnations,
             const caf::error& why) {
  fail_held(st, why);
  auto workers = static_cast<std::size_t>(spec.workers);
  st.spec = spec;
  st.layout = std::move(layout);
  st.params = std::move(params);
  st.slots = optimizer_state_slots(st.spec.optimizer.kind);
  st.opt_state = std::move(opt_state);
  st.clocks.assign(workers, clock);
  st.live.assign(workers, true);
  incarnations.resize(workers, 0);
  st.incarnation = std::move(incarnations);
  st.min_clock = clock;
  st.newest_clock = newest_clock;
  st.seen.assign(st.layout->shard_blocks(st.shard).size(), 0);
  st.sync_grads.assign(st.spec.mode == consistency::sync ? workers : 0,
                       std::vector<float>(st.params.size()));
  st.sync_pushed.assign(workers, false);
  st.sync_sum.assign(st.spec.mode == consistency::sync ? st.params.size() : 0, 0.0f);
  st.snapshots.clear();
  st.stats.updates = updates;
  st.cached_updates = std::numeric_limits<uint64_t>::max();
}

/// The layout of `spec` for this shard, or the error to drop the message with.
caf::expected<std::unique_ptr<block_layout>> layout_for(const ps_shard_state& st,
                                                        const train_spec& spec) {
  std::unique_ptr<block_layout> layout;
  try {
    layout = std::make_unique<block_layout>(spec);
  } catch (const std::exception& e) {
    return make_error(errc::invalid_spec, e.what());
  }
  if (st.shard >= layout->shards())
    return make_error(errc::wrong_shard, "the spec has fewer shards");
  return layout;
}

caf::result<caf::ok_atom> initialize(self_ptr self, const wire_buffer& buf) {
  auto& st = self->state;
  auto init = decode_shard_init(buf);
  if (!init) return drop(st, "init", init.error());
  if (init->shard != st.shard)
    return drop(st, "init", make_error(errc::wrong_shard, "init for shard "
                                                            + std::to_string(init->shard)));
  auto layout = layout_for(st, init->spec);
  if (!layout) return drop(st, "init", layout.error());
  const auto& ids = (*layout)->shard_blocks(st.shard);
  if (init->blocks.size() != ids.size())
    return drop(st, "init", make_error(errc::missing_block, "init carries "
                                                              + std::to_string(init->blocks.size())
                                                              + " blocks"));
  std::vector<float> params((*layout)->shard_floats(st.shard));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& b = (*layout)->blocks()[ids[i]];
    const auto& v = init->blocks[i];
    if (v.id != b.id || v.count != b.size || !all_finite(v.values, v.count))
      return drop(st, "init", make_error(errc::wrong_element_count,
                                         "init block " + std::to_string(v.id)));
    std::memcpy(params.data() + b.shard_offset, v.values, v.count * sizeof(float));
  }
  auto state = std::vector<float>(optimizer_state_slots(init->spec.optimizer.kind) * params.size());
  st.stats = shard_stats{};
  st.stats.shard = st.shard;
  install(st, init->spec, std::move(*layout), std::move(params), std::move(state), 0, 0, -1, {},
          make_error(errc::not_initialized, "shard re-initialised"));
  return caf::ok_atom::value;
}

caf::result<caf::ok_atom> restore(self_ptr self, const wire_buffer& buf,
                                  std::vector<uint32_t> incarnations) {
  auto& st = self->state;
  auto saved = decode_shard_checkpoint(buf);
  if (!saved) return drop(st, "restore", saved.error());
  auto layout = layout_for(st, saved->spec);
  if (!layout) return drop(st, "restore", layout.error());
  if (auto err = check_shard_checkpoint(*saved, **layout, st.shard))
    return drop(st, "restore", std::move(err));
  std::vector<float> params((*layout)->shard_floats(st.shard));
  auto slots = optimizer_state_slots(saved->spec.optimizer.kind);
  std::vector<float> state(slots * params.size());
  const auto& ids = (*layout)->shard_blocks(st.shard);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& b = (*layout)->blocks()[ids[i]];
    std::memcpy(params.data() + b.shard_offset, saved->blocks[i].values, b.size * sizeof(float));
    std::memcpy(state.data() + slots * b.shard_offset, saved->state[i].values,
                slots * b.size * sizeof(float));
  }
  install(st, saved->spec, std::move(*layout), std::move(params), std::move(state), saved->clock,
          saved->updates, saved->newest_clock, std::move(incarnations),
          make_error(errc::rolled_back, "restored to clock " + std::to_string(saved->clock)));
  log_line(st.who(), "restored to the checkpoint at clock " + std::to_string(saved->clock));
  return caf::ok_atom::value;
}

/// Writes the snapshot taken at `clock` through the shard's disk actor and answers `promise`.
void write_checkpoint(self_ptr self, const std::string& dir, int64_t clock,
                      caf::typed_response_promise<file_record> promise) {
  auto& st = self->state;
  auto i = st.snapshots.find(clock);
  if (!st.io) {
    auto io = st.io = spawn_checkpoint_io(self->system());
    // by value: the state is gone when attached functors run
    self->attach_functor([io] { caf::anon_send_exit(io, caf::exit_reason::user_shutdown); });
  }
  auto path = dir + "/" + shard_file_name(st.shard);
  self->request(st.io, caf::infinite, write_atom::value, path, i->second)
    .then([=](file_record& rec) mutable { promise.deliver(std::move(rec)); },
          [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
}

/// Keeps the state of every checkpoint clock the min clock has just reached or passed (labelled
/// with that clock: in sync mode it is exactly the state after that clock's update), and writes
/// the ones the chief is already waiting for.
void take_snapshots(self_ptr self, int64_t before) {
  auto& st = self->state;
  auto every = st.spec.checkpoint_every;
  auto now = progress_clock(st);
  if (every <= 0 || now <= before) return;
  int64_t due = -1;
  if (now / every > before / every) due = now / every * every;
  if (before < st.spec.total_clocks && now >= st.spec.total_clocks) due = st.spec.total_clocks;
  if (due < 0) return;
  st.snapshots[due] = encode_shard_checkpoint(st.spec, st.shard, due, st.stats.updates,
                                              st.newest_clock, *st.layout, st.params.data(),
                                              st.opt_state.data(), st.slots);
  while (st.snapshots.size() > 2) st.snapshots.erase(st.snapshots.begin());
  auto keep = st.held_checkpoints.begin();
  for (auto& h : st.held_checkpoints) {
    if (st.snapshots.count(h.clock))
      write_checkpoint(self, h.dir, h.clock, h.promise);
    else if (h.clock <= now)
      h.promise.deliver(make_error(errc::checkpoint_failed,
                                   "clock " + std::to_string(h.clock) + " is not a checkpoint clock"));
    else
      *keep++ = std::move(h);
  }
  st.held_checkpoints.erase(keep, st.held_checkpoints.end());
}

/// After anything that may raise the min clock: sync applies, snapshots, held pulls.
void advance(self_ptr self, int64_t before) {
  auto& st = self->state;
  if (st.spec.mode == consistency::sync) maybe_apply_sync(st);
  take_snapshots(self, before);
  release_held(st);
}

ps_shard_actor::behavior_type ps_shard(self_ptr self, int32_t shard) {
  self->state.shard = shard;
  self->state.stats.shard = shard;
  auto valid_worker = [=](int32_t worker) {
    return worker >= 0 && worker < static_cast<int32_t>(self->state.live.size());
  };
  return {
    [=](init_atom, const wire_buffer& buf) -> caf::result<caf::ok_atom> {
      return initialize(self, buf);
    },
    [=](restore_atom, const wire_buffer& buf,
        std::vector<uint32_t>& incarnations) -> caf::result<caf::ok_atom> {
      return restore(self, buf, std::move(incarnations));
    },
    [=](pull_atom, int32_t worker, int64_t clock) -> caf::result<wire_buffer> {
      auto& st = self->state;
      if (!st.initialized()) return drop(st, "pull", make_error(errc::not_initialized));
      if (!valid_worker(worker) || !st.live[worker])
        return drop(st, "pull", make_error(errc::unknown_worker, "worker " + std::to_string(worker)));
      if (clock > st.clocks[worker])
        return drop(st, "pull", make_error(errc::future_clock, "pull for clock "
                                                                 + std::to_string(clock)));
      return serve_pull(self, worker, clock);
    },
    [=](push_pull_atom, const wire_buffer& buf) -> caf::result<wire_buffer> {
      auto& st = self->state;
      if (!st.initialized()) return drop(st, "push", make_error(errc::not_initialized));
      auto push = decode_push(buf);
      if (!push) return drop(st, "push", push.error());
      if (auto err = validate(st, *push))
        return drop(st, "push from worker " + std::to_string(push->worker), std::move(err));
      auto before = progress_clock(st);
      accept_push(st, *push);
      take_snapshots(self, before);
      auto reply = serve_pull(self, push->worker, push->clock + 1);
      release_held(st);
      return reply;
    },
    [=](snapshot_atom) -> caf::result<wire_buffer> {
      auto& st = self->state;
      if (!st.initialized()) return make_error(errc::not_initialized);
      return encode_shard_parameters(parameters_kind::snapshot, st.shard, st.min_clock,
                                     st.newest_clock, st.stats.updates, *st.layout,
                                     st.params.data());
    },
    [=](stats_atom) -> shard_stats {
      auto stats = self->state.stats;
      stats.min_clock = self->state.min_clock;
      return stats;
    },
    [=](leave_atom, int32_t worker) {
      auto& st = self->state;
      if (!st.initialized() || !valid_worker(worker) || !st.live[worker]) return;
      auto before = progress_clock(st);
      st.live[worker] = false;
      st.sync_pushed[worker] = false;  // its gradient for the pending clock goes with it
      auto keep = std::remove_if(st.held.begin(), st.held.end(), [&](held_pull& h) {
        if (h.worker != worker) return false;
        h.promise.deliver(make_error(errc::unknown_worker, "worker left"));
        return true;
      });
      st.held.erase(keep, st.held.end());
      recompute_min(st);
      advance(self, before);
    },
    [=](rejoin_atom, int32_t worker) -> caf::result<int64_t> {
      auto& st = self->state;
      if (!st.initialized()) return drop(st, "rejoin", make_error(errc::not_initialized));
      if (!valid_worker(worker) || st.live[worker])
        return drop(st, "rejoin", make_error(errc::unknown_worker,
                                             "worker " + std::to_string(worker) + " is not gone"));
      auto clock = progress_clock(st);
      st.live[worker] = true;  // holds the min clock here until admit
      st.clocks[worker] = clock;
      st.sync_pushed[worker] = false;
      recompute_min(st);
      return clock;
    },
    [=](admit_atom, int32_t worker, int64_t clock, uint32_t incarnation) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (!st.initialized()) return drop(st, "admit", make_error(errc::not_initialized));
      if (!valid_worker(worker) || !st.live[worker] || clock < st.clocks[worker])
        return drop(st, "admit", make_error(errc::unknown_worker,
                                            "worker " + std::to_string(worker) + " at clock "
                                              + std::to_string(clock) + " was not rejoined below it"));
      auto before = progress_clock(st);
      st.clocks[worker] = clock;
      st.incarnation[worker] = incarnation;
      recompute_min(st);
      advance(self, before);
      return caf::ok_atom::value;
    },
    [=](checkpoint_atom, const std::string& dir, int64_t clock) -> caf::result<file_record> {
      auto& st = self->state;
      if (!st.initialized()) return make_error(errc::not_initialized);
      auto promise = self->make_response_promise<file_record>();
      if (st.snapshots.count(clock))
        write_checkpoint(self, dir, clock, promise);
      else if (clock > progress_clock(st))
        st.held_checkpoints.push_back({dir, clock, promise});
      else
        return make_error(errc::checkpoint_failed, "clock " + std::to_string(clock)
                                                     + " has passed without a snapshot");
      return promise;
    },
  };
}

} // namespace

ps_shard_actor spawn_ps_shard(caf::actor_system& sys, int32_t shard) {
  return sys.spawn(ps_shard, shard);
}

} // namespace actorps
