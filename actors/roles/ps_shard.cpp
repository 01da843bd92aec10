// The parameter shard's behaviour (ps_shard.hpp): pulls held by the consistency rule, pushes
// checked and applied, the clock table, checkpoints and snapshots, the standby. Its state and
// what its other files share: shard_state.hpp.
#include "actors/roles/ps_shard.hpp"

#include "actors/roles/authorisation.hpp"
#include "actors/roles/dense_update.hpp"
#include "actors/roles/shard_census.hpp"
#include "actors/roles/shard_replicate.hpp"
#include "actors/roles/shard_state.hpp"
#include "actors/roles/streamed_push.hpp"
#include "actors/storage/checkpoint_root.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/optimizer.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <functional>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <memory>
#include <type_traits>

namespace actorps {

// The shard's own functions; those its other files call are declared in shard_state.hpp.
namespace shard_internals {


/// The refusal of the message `self` is handling unless chief:0 sent it.
caf::error refused_unless_chief(self_ptr self, const std::string& what) {
  return refused(self->state, authorise_chief(current_role(self), what));
}

// --- replacing the whole state --------------------------------------------------------------

/// Replaces the whole state: the run's spec, values and optimizer state, every worker live at
/// `clock`. init (clock 0, fresh state) and restore (a checkpoint) both end here. The update
/// counter of the stats continues from the step count: the updates these values contain.
void install(ps_shard_state& st, const train_spec& spec, std::unique_ptr<block_layout> layout,
             float_buffer params, optimizer_state opt, shard_tables tables, int64_t clock,
             int64_t newest_clock, std::vector<uint32_t> incarnations, const caf::error& why) {
  fail_held(st, why);
  auto workers = static_cast<std::size_t>(spec.workers);
  auto sync = spec.mode == consistency::sync;
  st.spec = spec;
  st.layout = std::move(layout);
  st.cache.reply = wire_buffer{};
  release_for_writing(st.params, st.params_lease);
  release_for_writing(st.params_next, st.next_lease);
  st.params = std::move(params);
  st.params_next.clear();  // sized by the first update
  st.opt = std::move(opt);
  st.tables = std::move(tables);
  st.clocks = clock_table(workers, clock, spec.staleness_bound(), std::move(incarnations));
  st.tables.set_clock(clock);
  st.sweep.pass_clock = -1;  // a queued evict message finds the new tables; no second one
  st.newest_clock = newest_clock;
  st.seen.assign(st.layout->shard_blocks(st.shard).size(), 0);
  st.sync.grads.assign(sync ? workers : 0, std::vector<float>(st.params.size()));
  st.sync.pushed.assign(workers, false);
  st.round_pushes.assign(sync ? workers : 0, wire_buffer{});
  st.sync.sum.assign(sync ? st.params.size() : 0, 0.0f);
  st.snapshots.clear();
  st.asked_off_schedule.clear();
  st.checkpoint_asked = -1;
  st.snapshot_now.clear();
  st.removals_known_from = clock;  // a delta of an earlier checkpoint is whole
  st.export_delta_from = st.checkpoint_committed = -1;  // nor is an export's delta cut from before
  st.checkpoint_plan = -1;  // nor is the chief's plan for the next checkpoint known
  st.stats.updates = static_cast<uint64_t>(st.opt.step);
  st.cache = reply_cache{};
  st.dense_norms = norm_bound{st.config.bounds.gradient_norm_bound};  // warms up anew
  st.sparse_norms = st.dense_norms;
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
  if (auto why = invalid_buckets(spec); !why.empty()) return make_error(errc::invalid_spec, why);
  return layout;
}

// --- handlers, one per message --------------------------------------------------------------

/// The init's bytes, hashed: the workers of a loop of the user's own each send the same init.
std::size_t digest_of(const wire_buffer& buf) {
  return std::hash<std::string_view>{}(
    std::string_view(reinterpret_cast<const char*>(buf.bytes()), buf.size_bytes()));
}

/// Installs a fresh run. Without a chief, every worker of a loop of the user's own sends the
/// same init so that none waits for another: an init identical to the installed one is
/// acknowledged and changes nothing, a different one is refused (it would wipe the run).
caf::result<caf::ok_atom> on_init(self_ptr self, const wire_buffer& buf) {
  if (auto err = refused_unless_chief(self, "init")) return err;
  auto& st = self->state;
  auto digest = digest_of(buf);
  if (st.initialized()) {
    if (digest == st.init_digest) return caf::ok_atom::value;
    return drop(st, "init", make_error(errc::invalid_spec, "the shard already serves another "
                                                            "run's init"));
  }
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
  float_buffer params((*layout)->shard_floats(st.shard));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& b = (*layout)->blocks()[ids[i]];
    const auto& v = init->blocks[i];
    if (v.id != b.id || v.count != b.size)
      return drop(st, "init", make_error(errc::wrong_element_count,
                                         "init block " + std::to_string(v.id)));
    if (!all_within(v.values, v.count, st.config.bounds.max_parameter))
      return drop(st, "init", make_error(errc::value_out_of_bounds,
                                         "init block " + std::to_string(v.id)
                                           + " holds a value beyond ±"
                                           + value_text(st.config.bounds.max_parameter)));
    std::memcpy(params.data() + b.shard_offset, v.values, v.count * sizeof(float));
  }
  optimizer_state opt;
  opt.slots = optimizer_state_slots(init->spec.optimizer.kind);
  opt.values.assign(opt.slots * params.size(), 0.0f);
  st.stats = shard_stats{};
  st.stats.shard = st.shard;
  shard_tables tables(init->spec, st.shard, st.config.bounds.max_parameter);
  install(st, init->spec, std::move(*layout), std::move(params), std::move(opt), std::move(tables),
          0, -1, {}, make_error(errc::not_initialized, "shard re-initialised"));
  st.init_digest = digest;
  return caf::ok_atom::value;
}

/// Installs a ShardCheckpoint's state under its spec: its dense blocks, and its sparse rows
/// imported whole (a restore), or with `resize` (a live resize's part, move_in) taken in with
/// the rows of `parts` beside the rows of the buckets this shard keeps, the rows of those it
/// gives away dropped, and of the dense blocks those it gains beside those it keeps (a shard
/// not initialised takes everything from the part). Every worker is live at the file's clock
/// with `incarnations`; held pulls and checkpoints are answered with rolled_back, `why` and the
/// clock.
caf::error install_checkpoint(ps_shard_state& st, const wire_buffer& buf,
                              std::vector<uint32_t> incarnations, const std::string& why,
                              bool resize = false, const std::vector<wire_buffer>& parts = {}) {
  const bool moving = resize && st.initialized();
  const char* verb = resize ? "move" : "restore";
  if (moving) {
    // A part of a resize the run has gone back from since (a restore under newer
    // incarnations came first): refused, so that it cannot undo the restore.
    const auto& now = st.clocks.incarnations();
    for (std::size_t w = 0; w < now.size() && w < incarnations.size(); ++w)
      if (incarnations[w] < now[w])
        return drop(st, verb, make_error(errc::rolled_back, "a part of a resize the run went "
                                                            "back from"));
  }
  auto saved = decode_shard_checkpoint(buf);
  if (!saved) return drop(st, verb, saved.error());
  if (resize && saved->delta_since >= 0)
    return drop(st, verb, make_error(errc::checkpoint_failed, "a delta is no resize's part"));
  std::vector<shard_rows_view> rows;  // the parts' rows, read where they lie in `parts`
  for (const auto& part : parts) {
    auto view = read_shard_rows(part);
    if (!view) return drop(st, verb, view.error());
    if (view->clock != saved->clock)
      return drop(st, verb, make_error(errc::checkpoint_failed,
                                       "rows of the resize at clock "
                                         + std::to_string(view->clock) + " for one at clock "
                                         + std::to_string(saved->clock)));
    rows.push_back(std::move(*view));
  }
  auto layout = layout_for(st, saved->spec);
  if (!layout) return drop(st, verb, layout.error());
  // A shard that stays in a resize keeps its dense blocks that stay: the part brings only those
  // it gains (shard_cut::part_for).
  const block_layout* kept = moving ? st.layout.get() : nullptr;
  if (kept && (st.opt.slots != optimizer_state_slots(saved->spec.optimizer.kind)
               || st.params.size() != kept->shard_floats(st.shard)))
    return drop(st, verb, make_error(errc::invalid_spec, "a resize's part of another optimizer"));
  if (auto err = check_shard_checkpoint(*saved, **layout, st.shard,
                                        st.config.bounds.max_parameter, kept))
    return drop(st, verb, std::move(err));
  float_buffer params((*layout)->shard_floats(st.shard));
  optimizer_state opt;
  opt.slots = optimizer_state_slots(saved->spec.optimizer.kind);
  opt.values.resize(opt.slots * params.size());
  opt.step = static_cast<int64_t>(saved->optimizer_step);
  std::size_t next = 0;  // the part's next block
  for (auto id : (*layout)->shard_blocks(st.shard)) {
    const auto& b = (*layout)->blocks()[id];
    const float *values, *state;
    if (kept && kept->blocks()[id].shard == st.shard) {
      const auto at = kept->blocks()[id].shard_offset;
      values = st.params.data() + at;
      state = st.opt.values.data() + opt.slots * at;
    } else {
      values = saved->blocks[next].values;
      state = saved->state[next].values;
      ++next;
    }
    std::memcpy(params.data() + b.shard_offset, values, b.size * sizeof(float));
    std::memcpy(opt.values.data() + opt.slots * b.shard_offset, state,
                opt.slots * b.size * sizeof(float));
  }
  shard_tables tables;
  // The rows copied ahead for this resize join at the move; any other's are forgotten.
  auto arriving = std::move(st.arriving);
  if (!resize || st.arriving_clock != saved->clock) arriving = nullptr;
  st.arriving_clock = -1;
  if (resize) {
    if (!moving) st.tables = shard_tables(saved->spec, st.shard, st.config.bounds.max_parameter);
    if (auto err = st.tables.move_to(saved->spec, saved->sparse, rows, saved->clock,
                                     arriving.get()))
      return drop(st, verb, std::move(err));
    tables = std::move(st.tables);
  } else {
    tables = shard_tables(saved->spec, st.shard, st.config.bounds.max_parameter);
    if (auto err = tables.import_rows(saved->sparse, saved->clock))
      return drop(st, verb, std::move(err));
  }
  install(st, saved->spec, std::move(*layout), std::move(params), std::move(opt),
          std::move(tables), saved->clock, saved->newest_clock, std::move(incarnations),
          make_error(errc::rolled_back, why + std::to_string(saved->clock)));
  st.init_digest = 0;  // no init matches a restored state
  return caf::none;
}

/// (restore, ...) and move_in: the state installed once the standby's queue is empty.
caf::result<caf::ok_atom> on_restore(self_ptr self, const wire_buffer& buf,
                                     std::vector<uint32_t> incarnations, bool moving,
                                     std::vector<wire_buffer> parts = {}) {
  if (auto err = refused_unless_chief(self, moving ? "move" : "restore")) return err;
  auto& st = self->state;
  // The standby holds the state being replaced: the chief builds a new one from the restored
  // state. Operations still waiting for it are applied first, to the old state.
  st.standby = nullptr;
  auto restore = [=](const std::vector<uint32_t>& incarnations) -> caf::error {
    auto& st = self->state;
    const auto began = std::chrono::steady_clock::now();
    auto err = install_checkpoint(st, buf, incarnations,
                                  moving ? "moved to clock " : "restored to clock ", moving,
                                  parts);
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - began;
    if (!err)
      log_line(st.who(), (moving ? "took its part of the resize at clock "
                                 : "restored to the checkpoint at clock ")
                           + std::to_string(st.clocks.progress()) + " in "
                           + std::to_string(static_cast<int64_t>(took.count())) + " ms");
    return err;
  };
  if (st.queue.idle()) {
    if (auto err = restore(incarnations)) return err;
    return caf::ok_atom::value;
  }
  auto promise = self->make_response_promise<caf::ok_atom>();
  st.queue.run_or_queue([=]() mutable {
    if (auto err = restore(incarnations)) promise.deliver(std::move(err));
    else promise.deliver(caf::ok_atom::value);
  });
  return promise;
}

caf::result<caf::ok_atom> move_in(self_ptr self, const wire_buffer& buf,
                                  const std::vector<wire_buffer>& parts,
                                  std::vector<uint32_t> incarnations) {
  return on_restore(self, buf, std::move(incarnations), true, parts);
}

caf::result<wire_buffer> on_pull(self_ptr self, int32_t worker, int64_t clock) {
  auto& st = self->state;
  if (auto err = refused(st, authorise_worker(current_role(self), worker,
                                              "pull as worker " + std::to_string(worker))))
    return err;
  if (!st.initialized()) return drop(st, "pull", make_error(errc::not_initialized));
  if (!st.clocks.live(worker))
    return drop(st, "pull", make_error(errc::unknown_worker, "worker " + std::to_string(worker)));
  if (clock > st.clocks.finished(worker))
    return drop(st, "pull", make_error(errc::future_clock, "pull for clock "
                                                             + std::to_string(clock)));
  return serve_pull(self, worker, clock);
}

/// A pull naming sparse keys: checked like (pull, worker, clock), then served the same way.
caf::result<wire_buffer> on_keyed_pull(self_ptr self, const wire_buffer& buf) {
  auto& st = self->state;
  if (!st.initialized()) return drop(st, "pull", make_error(errc::not_initialized));
  auto pull = decode_pull(buf);
  if (!pull) return drop(st, "pull", pull.error());
  if (auto err = refused(st, authorise_worker(current_role(self), pull->worker,
                                              "pull as worker " + std::to_string(pull->worker))))
    return err;
  if (pull->shard != st.shard)
    return drop(st, "pull", make_error(errc::wrong_shard, "addressed to shard "
                                                            + std::to_string(pull->shard)));
  if (!st.clocks.live(pull->worker))
    return drop(st, "pull", make_error(errc::unknown_worker, "worker "
                                                               + std::to_string(pull->worker)));
  if (pull->clock > st.clocks.finished(pull->worker))
    return drop(st, "pull", make_error(errc::future_clock, "pull for clock "
                                                             + std::to_string(pull->clock)));
  if (pull->all_rows)
    return drop(st, "pull", make_error(errc::malformed_message, "all rows asked by a pull, "
                                                                  "not a snapshot"));
  if (auto err = st.tables.validate(pull->keys, false)) return drop(st, "pull", std::move(err));
  return serve_pull(self, pull->worker, pull->clock, buf, std::move(pull->keys));
}

/// The current values and the current rows of the keys a Pull names, at once, never held.
caf::result<wire_buffer> on_keyed_snapshot(self_ptr self, const wire_buffer& buf) {
  auto& st = self->state;
  if (auto err = refused(st, authorise_reader(current_role(self), "snapshot"))) return err;
  if (!st.initialized()) return make_error(errc::not_initialized);
  auto pull = decode_pull(buf);
  if (!pull) return drop(st, "snapshot", pull.error());
  if (pull->shard != st.shard)
    return drop(st, "snapshot", make_error(errc::wrong_shard, "addressed to shard "
                                                                + std::to_string(pull->shard)));
  if (pull->all_rows && !pull->keys.empty())
    return drop(st, "snapshot", make_error(errc::malformed_message, "all rows and keys asked"));
  if (pull->all_rows) return reply_with_all_rows(st);
  if (auto err = st.tables.validate(pull->keys, false)) return drop(st, "snapshot", std::move(err));
  return reply_with_rows(st, pull->keys);
}

/// The current values at once, never held (the evaluator's and the chief's view).
caf::result<wire_buffer> on_snapshot(self_ptr self) {
  auto& st = self->state;
  if (auto err = refused(st, authorise_reader(current_role(self), "snapshot"))) return err;
  if (!st.initialized()) return make_error(errc::not_initialized);
  return current_reply(st);
}

shard_stats on_stats(const ps_shard_state& st) {
  auto stats = st.stats;
  if (st.config.refusals_elsewhere) stats.refused_unauthorised += st.config.refusals_elsewhere();
  stats.min_clock = st.clocks.min();
  stats.table_rows = st.tables.rows();
  stats.table_bytes = st.tables.memory_bytes();
  stats.table_rows_peak = st.tables.peak_rows();
  stats.rows_evicted = st.tables.evicted();
  stats.pending_keys = st.tables.pending();
  stats.admission_bytes = st.tables.admission_bytes();
  return stats;
}

void apply_leave(self_ptr self, int32_t worker);

caf::result<void> on_leave(self_ptr self, int32_t worker) {
  auto& st = self->state;
  if (auto err = refused(st, authorise_chief_or_worker(current_role(self), worker,
                                                       "leave of worker "
                                                         + std::to_string(worker))))
    return err;
  replicate(self, [=] { apply_leave(self, worker); }, replicate_atom::value, leave_atom::value,
            worker);
  return caf::unit;
}

caf::result<caf::ok_atom> on_done(self_ptr self, int32_t worker) {
  auto& st = self->state;
  if (auto err = refused(st, authorise_chief_or_worker(current_role(self), worker,
                                                       "done of worker "
                                                         + std::to_string(worker))))
    return err;
  if (!st.initialized()) return drop(st, "done", make_error(errc::not_initialized));
  if (!st.clocks.known(worker))
    return drop(st, "done", make_error(errc::unknown_worker,
                                       "worker " + std::to_string(worker)));
  auto answer = self->make_response_promise<caf::ok_atom>();
  replicate(
    self,
    [=]() mutable {
      apply_leave(self, worker);
      answer.deliver(caf::ok_atom::value);
    },
    replicate_atom::value, leave_atom::value, worker);
  return answer;
}

/// Rejoin's checks and effect: where the replacement counts as live, and how many clocks of its
/// predecessor this shard holds. A push of the predecessor's still waiting for its clock's
/// mean stays (apply_leave): the replacement is live after it.
caf::expected<rejoin_point> apply_rejoin(ps_shard_state& st, int32_t worker) {
  if (!st.initialized()) return drop(st, "rejoin", make_error(errc::not_initialized));
  if (!st.clocks.known(worker) || st.clocks.live(worker))
    return drop(st, "rejoin", make_error(errc::unknown_worker,
                                         "worker " + std::to_string(worker) + " is not gone"));
  rejoin_point point;
  point.pushed = st.clocks.pushed(worker);
  // holds the min clock there until admit
  point.clock = st.clocks.rejoin(worker, st.sync.pushed[worker]);
  log_line(st.who(), "worker " + std::to_string(worker) + " rejoins, live at clock "
                       + std::to_string(point.clock) + "; " + std::to_string(point.pushed)
                       + " clocks of it here");
  return point;
}

/// Admit's checks and effect.
caf::error apply_admit(self_ptr self, int32_t worker, int64_t clock, uint32_t incarnation) {
  auto& st = self->state;
  if (!st.initialized()) return drop(st, "admit", make_error(errc::not_initialized));
  if (!st.clocks.live(worker) || clock < st.clocks.finished(worker))
    return drop(st, "admit", make_error(errc::unknown_worker,
                                        "worker " + std::to_string(worker) + " at clock "
                                          + std::to_string(clock) + " was not rejoined below it"));
  on_min_rose(self, st.clocks.admit(worker, clock, incarnation));
  return caf::none;
}

/// Worker `worker` is gone: its held pulls go with it. In sync mode a push it sent for the clock
/// still accumulated stays, and is applied with that clock's mean: the worker sent it to every
/// shard at once, and a shard that had completed the clock before the leave applied it already,
/// so dropping it here would leave the minibatch applied on some shards only.
void apply_leave(self_ptr self, int32_t worker) {
  auto& st = self->state;
  if (!st.initialized() || !st.clocks.live(worker)) return;
  auto keep = std::remove_if(st.held.begin(), st.held.end(), [&](held_pull& h) {
    if (h.worker != worker) return false;
    h.promise.deliver(make_error(errc::unknown_worker, "worker left"));
    return true;
  });
  st.held.erase(keep, st.held.end());
  on_min_rose(self, st.clocks.leave(worker));
}

caf::result<rejoin_point> on_rejoin(self_ptr self, int32_t worker) {
  if (auto err = refused_unless_chief(self, "rejoin")) return err;
  auto& st = self->state;
  if (!replicating(st)) {
    auto point = apply_rejoin(st, worker);
    if (!point) return std::move(point.error());
    return *point;
  }
  auto promise = self->make_response_promise<rejoin_point>();
  replicate(self, [=]() mutable {
    auto point = apply_rejoin(self->state, worker);
    if (point) promise.deliver(*point);
    else promise.deliver(std::move(point.error()));
  }, replicate_atom::value, rejoin_atom::value, worker);
  return promise;
}

caf::result<caf::ok_atom> on_admit(self_ptr self, int32_t worker, int64_t clock,
                                   uint32_t incarnation) {
  if (auto err = refused_unless_chief(self, "admit")) return err;
  if (!replicating(self->state)) {
    if (auto err = apply_admit(self, worker, clock, incarnation)) return err;
    return caf::ok_atom::value;
  }
  auto promise = self->make_response_promise<caf::ok_atom>();
  replicate(self, [=]() mutable {
    if (auto err = apply_admit(self, worker, clock, incarnation)) promise.deliver(std::move(err));
    else promise.deliver(caf::ok_atom::value);
  }, replicate_atom::value, admit_atom::value, worker, clock, incarnation);
  return promise;
}

/// Why a checkpoint clock the shard has passed has no snapshot: dropped for newer ones (the
/// chief lagged more than max_snapshots checkpoints behind: a newer checkpoint follows, nothing
/// is lost), a clock off the schedule asked for too late (the chief asks again, later), or
/// never taken.
caf::error passed_without_snapshot(const ps_shard_state& st, int64_t clock) {
  if (!st.snapshots.empty() && st.snapshots.begin()->first > clock)
    return make_error(errc::checkpoint_superseded,
                      "clock " + std::to_string(clock) + "'s snapshot made room for newer ones");
  if (!on_schedule(st.spec, clock))
    return make_error(errc::checkpoint_clock_passed,
                      "clock " + std::to_string(clock) + " had passed (the shard is at clock "
                        + std::to_string(st.clocks.progress()) + ")");
  return make_error(errc::checkpoint_failed,
                    "clock " + std::to_string(clock) + " has passed without a snapshot");
}

/// Notes a checkpoint asked for at `clock`, which min has not reached: one off the schedule is
/// kept when reached, as scheduled ones are.
void expect_checkpoint(ps_shard_state& st, int64_t clock) {
  if (!on_schedule(st.spec, clock)) st.asked_off_schedule.insert(clock);
}

/// The error to refuse a checkpoint into `dir` with when it lies outside the shard's root (its
/// own process's --checkpoint-dir, never the request's), counted and logged; none when inside.
caf::error refuse_outside_root(ps_shard_state& st, const std::string& dir) {
  auto why = outside_checkpoint_root(st.config.checkpoint_root, dir);
  if (why.empty()) return caf::none;
  ++st.stats.checkpoints_refused;
  ++st.stats.dropped;
  log_refusal(st, "refused a checkpoint", "refused a checkpoint into " + dir + ": " + why);
  return make_error(errc::outside_checkpoint_root, why);
}

caf::result<file_record> on_checkpoint(self_ptr self, const std::string& dir, int64_t clock,
                                       int64_t since) {
  if (auto err = refused_unless_chief(self, "checkpoint")) return err;
  auto& st = self->state;
  if (auto err = refuse_outside_root(st, dir)) return err;
  if (!st.initialized()) return make_error(errc::not_initialized);
  st.checkpoint_asked = std::max(st.checkpoint_asked, clock);
  auto kept = st.snapshots.count(clock) > 0 || snapshot_at_rest(self, clock, since);
  // Refuse before making a promise: in CAF 0.17 the promise takes over the request, so an
  // error returned after it would never reach the chief.
  if (!kept && clock <= st.clocks.progress()) return passed_without_snapshot(st, clock);
  if (kept)
    if (auto err = make_snapshot_serve(self, clock, since)) return err;
  auto promise = self->make_response_promise<file_record>();
  if (kept) {
    write_checkpoint(self, dir, clock, since, promise);
  } else {
    expect_checkpoint(st, clock);
    st.held_checkpoints.push_back({dir, clock, promise, {}, since, nullptr, {}});
  }
  return promise;
}

caf::result<wire_buffer> on_checkpoint_bytes(self_ptr self, int64_t clock, int64_t since) {
  if (auto err = refused_unless_chief(self, "checkpoint")) return err;
  auto& st = self->state;
  if (!st.initialized()) return make_error(errc::not_initialized);
  st.checkpoint_asked = std::max(st.checkpoint_asked, clock);
  if (!st.snapshots.count(clock)) snapshot_at_rest(self, clock, since);
  if (st.snapshots.count(clock)) {
    if (auto err = make_snapshot_serve(self, clock, since)) return err;
    return checkpoint_bytes(st, clock, since);
  }
  if (clock <= st.clocks.progress())  // refused before a promise, as on_checkpoint does
    return passed_without_snapshot(st, clock);
  auto promise = self->make_response_promise<wire_buffer>();
  expect_checkpoint(st, clock);
  st.held_checkpoints.push_back({"", clock, {}, promise, since, nullptr, {}});
  return promise;
}

// --- the standby's side, and building one (replication.hpp) ---------------------------------

/// The refusal of a replication message unless its primary sent it: from this process (simulate:
/// the primary and the standby share it), or, for a standby in another ps task, from that task
/// or the chief.
caf::error refused_unless_primary(self_ptr self, const std::string& what) {
  auto primary = self->state.config.primary_task;
  auto role = current_role(self);
  return refused(self->state, primary < 0 ? authorise_local(role, what)
                                          : authorise_primary(role, primary, what));
}

/// (replicate, Push): the standby applies a push its primary accepted, as the primary will.
caf::result<caf::ok_atom> on_replicated_push(self_ptr self, const wire_buffer& buf) {
  if (auto err = refused_unless_primary(self, "replicate")) return err;
  auto& st = self->state;
  if (!st.initialized()) return drop(st, "replicated push", make_error(errc::not_initialized));
  auto push = decode_push(buf);
  if (!push) return drop(st, "replicated push", push.error());
  if (auto err = check_push(st, *push)) return err;
  // Its primary bounded its norm: measured here, for the bound this standby keeps if promoted.
  if (auto applied = apply_push(self, buf, *push, nullptr, false); !applied)
    return std::move(applied.error());
  return caf::ok_atom::value;
}

/// The state a new standby starts from: the applied state (nothing waits in the queue). In sync
/// mode the pushes of the clock being accumulated travel as they came, to be replayed.
replica_image make_image(const ps_shard_state& st) {
  replica_image image;
  image.checkpoint = encode_shard_checkpoint(
    st.spec, st.shard, st.clocks.progress(), static_cast<uint64_t>(st.opt.step),
    st.newest_clock, *st.layout, st.params.data(), st.opt.values.data(), st.opt.slots,
    st.tables.export_rows());
  image.finished = st.clocks.finished_clocks();
  image.live = st.clocks.live_flags();
  image.incarnations = st.clocks.incarnations();
  image.pushed = st.clocks.pushed_clocks();
  if (st.spec.mode == consistency::sync)
    for (int32_t w = 0; w < static_cast<int32_t>(st.clocks.workers()); ++w)
      if (st.sync.pushed[w]) {  // (a worker that left after pushing too: apply_leave)
        image.pending.push_back(st.round_pushes[w]);
        --image.finished[w];  // the replay finishes it again
        --image.pushed[w];
      }
  image.stats = st.stats;
  image.init_digest = st.init_digest;
  return image;
}

uint64_t image_bytes(const replica_image& image) {
  uint64_t bytes = image.checkpoint.size_bytes()
                   + image.finished.size() * (2 * sizeof(int64_t) + 2 * sizeof(uint32_t));
  for (const auto& p : image.pending) bytes += p.size_bytes();
  return bytes;
}

/// (replicate, image): a new standby takes over its primary's whole state.
caf::result<caf::ok_atom> on_replica_image(self_ptr self, const replica_image& image) {
  if (auto err = refused_unless_primary(self, "replicate")) return err;
  auto& st = self->state;
  if (auto err = install_checkpoint(st, image.checkpoint, image.incarnations,
                                    "replaced by its primary's state at clock "))
    return err;
  if (image.finished.size() != st.clocks.workers() || image.live.size() != st.clocks.workers()
      || image.pushed.size() != st.clocks.workers())
    return drop(st, "replica image", make_error(errc::malformed_message, "clock table size"));
  // A pending push of a worker that left after sending it is replayed with its worker live, which
  // then leaves again (its finished clock is past min: min does not move).
  auto live = image.live;
  std::vector<int32_t> left;
  std::vector<push_view> pending;
  for (const auto& buf : image.pending) {
    auto push = decode_push(buf);
    if (!push) return drop(st, "replica image", push.error());
    if (!st.clocks.known(push->worker))
      return drop(st, "replica image", make_error(errc::unknown_worker, "a pending push's"));
    if (!live[push->worker]) live[push->worker] = 1, left.push_back(push->worker);
    pending.push_back(std::move(*push));
  }
  st.clocks = clock_table(image.finished, live, st.spec.staleness_bound(), image.incarnations,
                          image.pushed);
  for (std::size_t i = 0; i < pending.size(); ++i) {
    if (auto err = check_push(st, pending[i])) return err;
    if (auto applied = apply_push(self, image.pending[i], pending[i], nullptr, false); !applied)
      return std::move(applied.error());
  }
  for (auto w : left) st.clocks.leave(w);
  st.stats = image.stats;  // counted the replayed pushes already
  st.init_digest = image.init_digest;
  st.cache = reply_cache{};
  st.tables.track_removed(false);
  st.removals_known_from = std::numeric_limits<int64_t>::max();
  shard_census::process().set_standby(self->address(), true);
  return caf::ok_atom::value;
}

/// (backup, standby) on the primary: once the operations waiting are applied, the standby gets
/// the state, and every later operation after it. Answers the image's bytes once it holds it.
/// (backup, null): the chief saw the standby lost. Across processes that is the word that counts:
/// a standby reached through the chief's node sends this shard no down message when its process
/// dies, and the operations waiting for it are applied now, unprotected (answered 0).
caf::result<uint64_t> on_backup(self_ptr self, const caf::strong_actor_ptr& ptr) {
  if (auto err = refused_unless_chief(self, "backup")) return err;
  auto& st = self->state;
  if (!st.initialized()) return make_error(errc::not_initialized);
  if (!ptr) {
    if (st.standby) log_line(st.who(), "standby lost (the chief says); serving unprotected");
    st.standby = nullptr;
    st.queue.complete_all();
    return uint64_t{0};
  }
  auto standby = caf::actor_cast<ps_shard_actor>(ptr);
  if (!standby || standby == ps_shard_actor{self})
    return drop(st, "backup", make_error(errc::malformed_message, "no standby named"));
  auto promise = self->make_response_promise<uint64_t>();
  st.queue.run_or_queue([=]() mutable {
    auto& st = self->state;
    auto image = make_image(st);
    auto bytes = image_bytes(image);
    st.stats.replicated_bytes += bytes;
    st.standby = standby;
    st.window = std::make_shared<replication_window>();
    self->monitor(standby);  // in another process its loss fails no request: see ps_shard()
    replicate(self, [=]() mutable {
      if (self->state.standby == standby) promise.deliver(bytes);
      else promise.deliver(make_error(errc::shard_lost, "the standby was lost"));
    }, replicate_atom::value, std::move(image));
  });
  return promise;
}

/// (promote): this standby's primary is lost; it serves in its place from now on. Answers how
/// many clocks apart the live workers are on it.
caf::result<int64_t> on_promote(self_ptr self) {
  if (auto err = refused_unless_chief(self, "promote")) return err;
  auto& st = self->state;
  if (!st.initialized()) return drop(st, "promote", make_error(errc::not_initialized));
  st.promoted = true;
  st.tables.track_removed(true);  // its next checkpoint is whole; deltas count from here on
  st.removals_known_from = st.clocks.progress();
  shard_census::process().set_standby(self->address(), false);
  int64_t newest = st.clocks.min();
  for (int32_t w = 0; w < static_cast<int32_t>(st.clocks.workers()); ++w)
    if (st.clocks.live(w)) newest = std::max(newest, st.clocks.finished(w));
  auto apart = st.clocks.min() == clock_table::no_live_workers ? 0 : newest - st.clocks.min();
  log_line(st.who(), "standby promoted to primary at clock " + std::to_string(st.clocks.progress()));
  return apart;
}

ps_shard_actor::behavior_type ps_shard(self_ptr self, int32_t shard, shard_config cfg) {
  self->state.shard = shard;
  self->state.config = std::move(cfg);
  self->state.stats.shard = shard;
  // Only a standby is monitored (on_backup): once it is lost, what waits for its acknowledgement
  // is applied unprotected (a request to a process that died is never answered).
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (!st.standby || st.standby.address() != dm.source) return;
    st.standby = nullptr;
    log_line(st.who(), "standby lost (" + caf::to_string(dm.reason) + "); serving unprotected");
    st.queue.complete_all();
  });
  return {
    [=](init_atom, const wire_buffer& buf) { return on_init(self, buf); },
    [=](restore_atom, const wire_buffer& buf, std::vector<uint32_t>& incarnations) {
      return on_restore(self, buf, std::move(incarnations), false);
    },
    [=](restore_atom, resize_atom, const wire_buffer& buf, const std::vector<wire_buffer>& parts,
        std::vector<uint32_t>& incarnations) {
      return move_in(self, buf, parts, std::move(incarnations));
    },
    [=](resize_atom, int64_t clock, std::vector<uint16_t>& buckets,
        std::vector<uint16_t>& blocks) -> caf::result<std::vector<wire_buffer>> {
      if (auto err = refused_unless_chief(self, "resize")) return err;
      return hand_over(self, clock, {std::move(buckets), std::move(blocks)});
    },
    [=](resize_atom, copy_atom, int64_t clock, const std::vector<uint16_t>& buckets,
        uint64_t budget) -> caf::result<bool, std::vector<wire_buffer>> {
      if (auto err = refused_unless_chief(self, "copy ahead")) return err;
      return copy_ahead(self, clock, buckets, budget);
    },
    [=](resize_atom, copy_atom, const wire_buffer& rows) -> caf::result<caf::ok_atom> {
      if (auto err = refused_unless_chief(self, "take rows copied ahead")) return err;
      return stage_copy(self, rows);
    },
    [=](pull_atom, int32_t worker, int64_t clock) { return on_pull(self, worker, clock); },
    [=](push_pull_atom, const push_request& request) { return on_push_request(self, request); },
    [=](pull_atom, const wire_buffer& buf) { return on_keyed_pull(self, buf); },
    [=](snapshot_atom) { return on_snapshot(self); },
    [=](snapshot_atom, const wire_buffer& buf) { return on_keyed_snapshot(self, buf); },
    [=](stats_atom) -> caf::result<shard_stats> {
      if (auto err = refused_unless_chief(self, "stats")) return err;
      return on_stats(self->state);
    },
    [=](leave_atom, int32_t worker) { return on_leave(self, worker); },
    [=](done_atom, int32_t worker) { return on_done(self, worker); },
    [=](rejoin_atom, int32_t worker) { return on_rejoin(self, worker); },
    [=](admit_atom, int32_t worker, int64_t clock, uint32_t incarnation) {
      return on_admit(self, worker, clock, incarnation);
    },
    [=](checkpoint_atom, const std::string& dir, int64_t clock) {
      return on_checkpoint(self, dir, clock, -1);
    },
    [=](checkpoint_atom, int64_t clock) { return on_checkpoint_bytes(self, clock, -1); },
    [=](checkpoint_atom, const std::string& dir, int64_t clock, int64_t since) {
      return on_checkpoint(self, dir, clock, since);
    },
    [=](checkpoint_atom, int64_t clock, int64_t since) {
      return on_checkpoint_bytes(self, clock, since);
    },
    [=](checkpoint_atom, snapshot_atom, int64_t clock,
        int64_t since) -> caf::result<wire_buffer> {
      if (auto err = refused_unless_chief(self, "checkpoint")) return err;
      return export_snapshot(self, clock, since);
    },
    [=](checkpoint_atom, commit_atom, int64_t clock, int64_t next_since) {
      if (refused_unless_chief(self, "checkpoint")) return;
      checkpoint_committed(self, clock, next_since);
    },
    [=](replicate_atom, const wire_buffer& buf) { return on_replicated_push(self, buf); },
    [=](replicate_atom, leave_atom, int32_t worker) -> caf::result<caf::ok_atom> {
      if (auto err = refused_unless_primary(self, "replicate")) return err;
      apply_leave(self, worker);
      return caf::ok_atom::value;
    },
    [=](replicate_atom, rejoin_atom, int32_t worker) -> caf::result<caf::ok_atom> {
      if (auto err = refused_unless_primary(self, "replicate")) return err;
      auto clock = apply_rejoin(self->state, worker);
      if (!clock) return std::move(clock.error());
      return caf::ok_atom::value;
    },
    [=](replicate_atom, admit_atom, int32_t worker, int64_t clock,
        uint32_t incarnation) -> caf::result<caf::ok_atom> {
      if (auto err = refused_unless_primary(self, "replicate")) return err;
      if (auto err = apply_admit(self, worker, clock, incarnation)) return err;
      return caf::ok_atom::value;
    },
    [=](replicate_atom, const replica_image& image) { return on_replica_image(self, image); },
    [=](backup_atom, const caf::strong_actor_ptr& standby) { return on_backup(self, standby); },
    [=](promote_atom) { return on_promote(self); },
    [=](evict_atom) {
      if (refused(self->state, authorise_local(current_role(self), "evict"))) return;
      on_sweep(self);
    },
  };
}

} // namespace shard_internals

ps_shard_actor spawn_ps_shard(caf::actor_system& sys, int32_t shard, shard_config cfg) {
  if (auto why = invalid_bound(cfg.bounds.max_gradient); !why.empty())
    throw std::invalid_argument("max_gradient " + why);
  if (auto why = invalid_bound(cfg.bounds.max_parameter); !why.empty())
    throw std::invalid_argument("max_parameter " + why);
  auto spawned = sys.spawn(shard_internals::ps_shard, shard, std::move(cfg));
  shard_census::process().add(shard, spawned);
  return spawned;
}

} // namespace actorps
