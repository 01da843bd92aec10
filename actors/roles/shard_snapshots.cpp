// A shard's state kept at each checkpoint clock the min clock reaches, and written through its
// disk actor when the chief asks for it: whole, or, when the chief's last commit said the next
// checkpoint is a delta since k, only the sparse rows changed since k (so that a delta costs the
// shard what changed, not a copy of its table).
#include "actors/roles/shard_state.hpp"

#include <caf/all.hpp>

#include "actors/storage/checkpoint_io.hpp"
#include "actors/storage/checkpoint_store.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

namespace actorps::shard_internals {

namespace {

/// What the snapshot kept at `clock` holds: -1 the whole state, k the changes since clock k.
int64_t kept_since(const ps_shard_state& st, int64_t clock) {
  auto it = st.snapshot_since.find(clock);
  return it == st.snapshot_since.end() ? -1 : it->second;
}

} // namespace

bool snapshot_serves(const ps_shard_state& st, int64_t clock, int64_t since) {
  if (!st.snapshots.count(clock)) return false;
  auto kept = kept_since(st, clock);
  return kept < 0 || (since >= kept && since < clock);
}

wire_buffer checkpoint_bytes(const ps_shard_state& st, int64_t clock, int64_t since) {
  const auto& kept = st.snapshots.at(clock);
  // Only the changes since an earlier clock: those since `since` and some more, which a fold
  // onto the checkpoint at `since` takes as well (each row as it is at `clock`).
  if (kept_since(st, clock) >= 0) return kept;
  // A delta needs every removal since its predecessor remembered, and rows restored no later.
  if (since < 0 || since >= clock || since < st.removals_known_from) return kept;
  auto view = decode_shard_checkpoint(kept);  // encoded here: cannot fail
  if (!view) return kept;
  auto then = st.snapshot_now.find(clock);
  view->sparse = st.tables.delta_of(std::move(view->sparse), since,
                                    then == st.snapshot_now.end() ? clock : then->second);
  view->delta_since = since;
  return encode_shard_checkpoint(view->spec, *view);
}

void write_checkpoint(self_ptr self, const std::string& dir, int64_t clock, int64_t since,
                      caf::typed_response_promise<file_record> promise) {
  auto& st = self->state;
  if (!st.io) {
    auto io = st.io = spawn_checkpoint_io(self->system());
    // by value: the state is gone when attached functors run
    self->attach_functor([io] { caf::anon_send_exit(io, caf::exit_reason::user_shutdown); });
  }
  auto path = dir + "/" + shard_file_name(st.shard);
  self->request(st.io, caf::infinite, write_atom::value, path, checkpoint_bytes(st, clock, since))
    .then([=](file_record& rec) mutable { promise.deliver(std::move(rec)); },
          [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
}

/// Whether the shards keep `clock`'s state unasked: every checkpoint_every clocks, and the last.
bool on_schedule(const train_spec& spec, int64_t clock) {
  auto every = spec.checkpoint_every;
  return every > 0 && (clock % every == 0 || clock == spec.total_clocks);
}

namespace {

/// The state now, whole, as a ShardCheckpoint labelled `clock`.
wire_buffer state_now(const ps_shard_state& st, int64_t clock) {
  return encode_shard_checkpoint(
    st.spec, st.shard, clock, static_cast<uint64_t>(st.opt.step), st.newest_clock, *st.layout,
    st.params.data(), st.opt.values.data(), st.opt.slots, st.tables.export_rows());
}

/// The state now, labelled `clock`, kept until the chief asks for it: the sparse rows changed
/// since k only, with k the clock the chief said (its last commit) or a held request says its
/// delta counts from, when the shard remembers every removal since k; else whole (a delta is cut
/// from it when the chief asks). While a checkpoint the chief asked is not committed, or one
/// kept earlier may be asked first, its outcome decides this one's kind: whole then. A delta
/// costs what changed, not the table.
void keep_snapshot(ps_shard_state& st, int64_t clock, std::optional<int64_t> wanted = {}) {
  // The plan is for the next checkpoint only: one kept at an earlier clock since the commit may
  // be asked first, and whether it is written decides this one's kind.
  const auto earlier = st.snapshots.upper_bound(st.checkpoint_committed);
  const bool next = earlier == st.snapshots.end() || earlier->first >= clock;
  int64_t since =
    next && st.checkpoint_asked <= st.checkpoint_committed ? st.checkpoint_plan : -1;
  for (const auto& h : st.held_checkpoints)
    if (h.clock == clock) since = h.since;  // asked already: exactly what is wanted
  if (wanted) since = *wanted;
  for (const auto& h : st.held_exports)  // an export version's state is cut from it too
    if (h.clock == clock && h.since != since) since = -1;
  if (since < 0 || since >= clock || since < st.removals_known_from
      || st.spec.model.sparse_tables.empty()) {
    st.snapshots[clock] = state_now(st, clock);
    st.snapshot_now[clock] = st.tables.clock();
    st.snapshot_since.erase(clock);
    return;
  }
  st.snapshots[clock] = encode_shard_checkpoint(
    st.spec, st.shard, clock, static_cast<uint64_t>(st.opt.step), st.newest_clock, *st.layout,
    st.params.data(), st.opt.values.data(), st.opt.slots,
    st.tables.changed_rows(since), since);
  st.snapshot_now.erase(clock);
  st.snapshot_since[clock] = since;
}

/// Forgets the removals that no delta can need any more: those before both the newest
/// checkpoint committed (a run that writes checkpoints; none yet: nothing forgotten) and the
/// clock the next export delta may count from.
void forget_removals(ps_shard_state& st) {
  int64_t before = st.spec.checkpoint_every > 0 ? st.checkpoint_committed : st.export_delta_from;
  if (st.export_delta_from >= 0) before = std::min(before, st.export_delta_from);
  if (before > 0) st.tables.forget_removed(before);
}

/// The state at `clock` for an export version: whole, or with `since` >= 0 the sparse rows
/// changed since, when this shard answered the state at `since` itself since its state was
/// installed (export_delta_from) and remembers every removal since; the whole state otherwise,
/// which the writer takes as a full version's (or refuses, when another shard's is a delta).
/// Cut from the snapshot a checkpoint keeps of that clock; else from the state now (in sync
/// mode exactly that clock's: min moves one clock at a time), only the changed rows copied.
/// Whether an export version's state at `clock` is a delta since `since` (export_state).
bool export_delta(const ps_shard_state& st, int64_t clock, int64_t since) {
  return since >= 0 && since < clock && st.export_delta_from >= 0
         && since >= st.export_delta_from && since >= st.removals_known_from;
}

/// Whether the snapshot kept at `clock` holds an export version's state since `since`: a
/// whole one; one of the changes since another clock than the version before is of no use (the
/// writer wants every shard's delta since the same version).
bool export_from_snapshot(const ps_shard_state& st, int64_t clock, int64_t since) {
  if (!st.snapshots.count(clock)) return false;
  const auto kept = kept_since(st, clock);
  return kept < 0 || (export_delta(st, clock, since) && kept == since);
}

wire_buffer export_state(ps_shard_state& st, int64_t clock, int64_t since) {
  const bool delta = export_delta(st, clock, since);
  const bool kept = export_from_snapshot(st, clock, since);
  st.export_delta_from = std::max(st.export_delta_from, delta ? since : clock);
  wire_buffer bytes;
  if (kept) bytes = checkpoint_bytes(st, clock, delta ? since : -1);
  else if (!delta) bytes = state_now(st, clock);
  else
    bytes = encode_shard_checkpoint(st.spec, st.shard, clock, static_cast<uint64_t>(st.opt.step),
                                    st.newest_clock, *st.layout, st.params.data(),
                                    st.opt.values.data(), st.opt.slots,
                                    st.tables.changed_rows(since), since);
  forget_removals(st);
  return bytes;
}

/// A hand-over's files at the clock now (hand_over): the dense blocks that leave and the
/// sketches, then the rows for each new shard. The blocks that stay are neither copied nor sent.
std::vector<wire_buffer> hand_over_state(const ps_shard_state& st, int64_t clock,
                                         const new_placement& placement) {
  const auto began = std::chrono::steady_clock::now();
  std::vector<wire_buffer> out;
  shard_checkpoint_view leaving;
  leaving.spec = st.spec;
  leaving.shard = st.shard;
  leaving.clock = clock;
  leaving.optimizer_step = static_cast<uint64_t>(st.opt.step);
  leaving.newest_clock = st.newest_clock;
  for (auto id : st.layout->shard_blocks(st.shard)) {
    if (placement.blocks.empty() || placement.blocks[id] == st.shard) continue;
    const auto& b = st.layout->blocks()[id];
    leaving.blocks.push_back({id, st.params.data() + b.shard_offset, b.size});
    leaving.state.push_back(
      {id, st.opt.values.data() + st.opt.slots * b.shard_offset, st.opt.slots * b.size});
  }
  leaving.sparse = st.tables.admission_states();
  out.push_back(encode_shard_checkpoint(st.spec, leaving));
  const auto tables = st.tables.tables();
  // After a copy ahead, only what changed since (and what it copied that is gone).
  const auto since = st.tables.copied_since(placement.buckets, clock);
  for (const auto& part : st.tables.pick_moving(placement.buckets, clock)) {
    bool any = false;
    for (const auto& t : part)
      any = any || !t.rows.empty() || !t.pending.pending_keys.empty() || !t.gone.empty();
    out.push_back(any ? encode_shard_rows(st.spec, st.shard, clock, tables, part, since)
                      : wire_buffer{});
  }
  uint64_t bytes = 0;
  for (const auto& b : out) bytes += b.size_bytes();
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - began;
  log_line(st.who(), "handed over " + std::to_string(bytes) + " bytes for the resize at clock "
                       + std::to_string(clock) + " in "
                       + std::to_string(static_cast<int64_t>(took.count())) + " ms");
  return out;
}

/// Answers the export requests (and hand-overs) whose clock min has reached (`now`).
void answer_exports(ps_shard_state& st, int64_t now) {
  auto keep = st.held_exports.begin();
  for (auto& h : st.held_exports) {
    if (h.clock > now) {
      if (&*keep != &h) *keep = std::move(h);
      ++keep;
      continue;
    }
    if (h.moving_to) h.parts.deliver(hand_over_state(st, h.clock, *h.moving_to));
    else h.bytes.deliver(export_state(st, h.clock, h.since));
  }
  st.held_exports.erase(keep, st.held_exports.end());
}

} // namespace

caf::result<wire_buffer> export_snapshot(self_ptr self, int64_t clock, int64_t since) {
  auto& st = self->state;
  if (!st.initialized()) return make_error(errc::not_initialized);
  // Delta versions' tombstones: removals remembered from here on, as for checkpoints.
  if (!st.tables.want_removals())
    st.removals_known_from = std::max(st.removals_known_from, st.clocks.progress());
  // At the clock now (or kept): its state, as when a held request is answered (exactly so in
  // sync mode, where pushes of later clocks wait for the round).
  if (export_from_snapshot(st, clock, since) || st.clocks.progress() == clock)
    return export_state(st, clock, since);
  if (clock < st.clocks.progress())
    return make_error(errc::checkpoint_clock_passed,
                      "clock " + std::to_string(clock) + " had passed (the shard is at clock "
                        + std::to_string(st.clocks.progress()) + ")");
  auto promise = self->make_response_promise<wire_buffer>();
  st.held_exports.push_back({"", clock, {}, promise, since, nullptr, {}});
  return promise;
}

caf::result<bool, std::vector<wire_buffer>> copy_ahead(self_ptr self, int64_t clock,
                                                       const std::vector<uint16_t>& buckets,
                                                       uint64_t budget) {
  auto& st = self->state;
  if (buckets.empty()) {  // the copy will not be used: forgotten, as copied and as kept aside
    st.tables.end_copy();
    if (st.arriving_clock == clock) {
      st.arriving = nullptr;
      st.arriving_clock = -1;
    }
    return caf::result<bool, std::vector<wire_buffer>>(true, std::vector<wire_buffer>{});
  }
  if (!st.initialized()) return make_error(errc::not_initialized);
  if (buckets.size() != st.spec.bucket_shards.size())
    return make_error(errc::invalid_spec,
                      "a placement of " + std::to_string(buckets.size())
                        + " buckets, the run's keys hash into "
                        + std::to_string(st.spec.bucket_shards.size()));
  if (clock <= st.clocks.progress())  // the hand-over holds the rest
    return make_error(errc::checkpoint_clock_passed,
                      "a copy ahead of the resize at clock " + std::to_string(clock)
                        + " (the shard is at clock " + std::to_string(st.clocks.progress()) + ")");
  if (!st.tables.copying_for(buckets, clock)) st.tables.begin_copy(buckets, clock);
  bool done = false;
  const auto picked = st.tables.copy_step(std::max<uint64_t>(budget, 1), done);
  const auto tables = st.tables.tables();
  std::vector<wire_buffer> out;
  for (const auto& part : picked) {
    bool any = false;
    for (const auto& t : part) any = any || !t.rows.empty();
    out.push_back(any ? encode_shard_rows(st.spec, st.shard, clock, tables, part)
                      : wire_buffer{});
  }
  return caf::result<bool, std::vector<wire_buffer>>(done, std::move(out));
}

caf::result<caf::ok_atom> stage_copy(self_ptr self, const wire_buffer& rows) {
  auto& st = self->state;
  auto view = read_shard_rows(rows);
  if (!view) return view.error();
  if (!st.arriving || st.arriving_clock != view->clock) {  // an earlier resize's: forgotten
    st.arriving = std::make_unique<shard_tables>(view->spec, st.shard,
                                                 st.config.bounds.max_parameter);
    st.arriving_clock = view->clock;
  }
  if (auto err = st.arriving->stage(*view)) return err;
  return caf::ok_atom::value;
}

caf::result<std::vector<wire_buffer>> hand_over(self_ptr self, int64_t clock,
                                                new_placement placement) {
  auto& st = self->state;
  if (!st.initialized()) return make_error(errc::not_initialized);
  if (placement.buckets.size() != st.spec.bucket_shards.size())
    return make_error(errc::invalid_spec,
                      "a placement of " + std::to_string(placement.buckets.size())
                        + " buckets, the run's keys hash into "
                        + std::to_string(st.spec.bucket_shards.size()));
  if (!placement.blocks.empty() && placement.blocks.size() != st.layout->blocks().size())
    return make_error(errc::invalid_spec,
                      "a placement of " + std::to_string(placement.blocks.size())
                        + " dense blocks, the model is cut into "
                        + std::to_string(st.layout->blocks().size()));
  if (st.clocks.progress() == clock) return hand_over_state(st, clock, placement);
  if (clock < st.clocks.progress())
    return make_error(errc::checkpoint_clock_passed,
                      "clock " + std::to_string(clock) + " had passed (the shard is at clock "
                        + std::to_string(st.clocks.progress()) + ")");
  held_checkpoint h{"", clock, {}, {}, -1, nullptr, {}};
  h.moving_to = std::make_shared<const new_placement>(std::move(placement));
  h.parts = self->make_response_promise<std::vector<wire_buffer>>();
  st.held_exports.push_back(h);
  return h.parts;
}

void checkpoint_committed(self_ptr self, int64_t clock, int64_t next_since) {
  auto& st = self->state;
  // From before a restore to an earlier clock (its state is gone): nothing to forget.
  if (!st.initialized() || clock < 0 || clock > st.clocks.progress()) return;
  if (clock >= st.checkpoint_committed) st.checkpoint_plan = next_since;
  st.checkpoint_committed = std::max(st.checkpoint_committed, clock);
  forget_removals(st);
}

caf::error make_snapshot_serve(self_ptr self, int64_t clock, int64_t since) {
  auto& st = self->state;
  if (snapshot_serves(st, clock, since)) return caf::none;
  if (snapshot_at_rest(self, clock, since)) return caf::none;
  st.checkpoint_plan = -1;  // whole snapshots until the chief says again what it will ask
  return make_error(errc::checkpoint_failed,
                    "the state kept at clock " + std::to_string(clock)
                      + " holds the changes since clock " + std::to_string(kept_since(st, clock))
                      + ", not "
                      + (since < 0 ? std::string("the whole state")
                                   : "those since clock " + std::to_string(since))
                      + ", and the shard is past it");
}

bool snapshot_at_rest(self_ptr self, int64_t clock, std::optional<int64_t> wanted) {
  auto& st = self->state;
  const auto& finished = st.clocks.finished_clocks();
  if (st.clocks.progress() != clock
      || std::any_of(finished.begin(), finished.end(), [&](int64_t f) { return f > clock; }))
    return false;
  keep_snapshot(st, clock, wanted);
  return true;
}

/// Keeps the state of every checkpoint clock the min clock has just reached or passed (labelled
/// with that clock: in sync mode it is exactly the state after that clock's update), and writes
/// the ones the chief is already waiting for.
void take_snapshots(self_ptr self, int64_t before) {
  auto& st = self->state;
  auto every = st.spec.checkpoint_every;
  auto now = st.clocks.progress();
  if (now <= before) return;
  std::vector<int64_t> due;
  if (every > 0 && now / every > before / every) due.push_back(now / every * every);
  if (every > 0 && before < st.spec.total_clocks && now >= st.spec.total_clocks)
    due.push_back(st.spec.total_clocks);
  auto& off = st.asked_off_schedule;
  for (auto i = off.begin(); i != off.end() && *i <= now; i = off.erase(i))
    if (*i > before) due.push_back(*i);
  for (auto clock : due) keep_snapshot(st, clock);
  answer_exports(st, now);
  if (due.empty()) return;
  // Kept until the chief has asked for them: its global clock, from the workers' reports, can
  // lag the shards' when it is busy, and a snapshot dropped before it asks fails that
  // checkpoint. It asks in clock order, so older ones are never asked for; the cap bounds the
  // memory when it lags far behind.
  st.snapshots.erase(st.snapshots.begin(), st.snapshots.lower_bound(st.checkpoint_asked));
  while (st.snapshots.size() > max_snapshots) st.snapshots.erase(st.snapshots.begin());
  for (auto it = st.snapshot_now.begin(); it != st.snapshot_now.end();)
    it = st.snapshots.count(it->first) ? std::next(it) : st.snapshot_now.erase(it);
  for (auto it = st.snapshot_since.begin(); it != st.snapshot_since.end();)
    it = st.snapshots.count(it->first) ? std::next(it) : st.snapshot_since.erase(it);
  auto keep = st.held_checkpoints.begin();
  for (auto& h : st.held_checkpoints) {
    if (st.snapshots.count(h.clock)) {
      if (auto err = make_snapshot_serve(self, h.clock, h.since)) h.fail(err);
      else if (h.dir.empty()) h.bytes.deliver(checkpoint_bytes(st, h.clock, h.since));
      else write_checkpoint(self, h.dir, h.clock, h.since, h.written);
    }
    else if (h.clock <= now)
      h.fail(make_error(errc::checkpoint_failed, "clock " + std::to_string(h.clock)
                                                   + " is not a checkpoint clock"));
    else if (&*keep++ != &h)  // never a self-move
      *std::prev(keep) = std::move(h);
  }
  st.held_checkpoints.erase(keep, st.held_checkpoints.end());
}

} // namespace actorps::shard_internals
