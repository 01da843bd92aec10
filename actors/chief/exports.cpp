// Export versions while training (--export-every): the chief asks every shard, ahead of time,
// for its state at the coming export clocks (the shards hold a request until their min clock
// reaches it, as for a checkpoint off the schedule, and keep nothing), then hands the states to
// the export writer, an actor of its own that writes the versions one after the other, in clock
// order, while training goes on (actors/serving/export_versions.hpp). A delta version's request
// names the clock of the version asked before it, and each shard sends only the rows changed
// since (shard_snapshots.cpp).
// Two versions are asked at a time: when one's states come, the next is held by the shards
// already, and the one after it is asked, so the request reaches the shards a whole export
// interval before they need it; with one, the next request left only when the states came, and
// a chief lagging the shards by the time it takes to send it (a loaded machine) skipped the
// version. More would keep more states when the writer is slow: at most three versions are
// asked or waiting for the writer (one more than the two asked, for a writer that answers
// late), none more is asked meanwhile, and clocks pass unasked while the writer is that far
// behind; training never waits.
// A version not written (its shards past it, its write failed) is the base of no delta: the
// version asked as a delta of it is asked again whole (or, its states here already, not written
// either); after a failed ask the chain goes on from the version before it, after a failed write
// the next version is full. The final steps wait for the versions, so that a run's versions are
// on disk when it reports.
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <utility>

namespace actorps::chief_detail {

namespace {

/// What the writer answers for one version: export_written's fields.
using written_fields = caf::result<uint64_t, bool, uint64_t, uint64_t, uint64_t>;

/// The writer: calls `write` for each (write, clock, shard states), one after the other, in a
/// thread of its own (the files are written and fsynced there).
caf::behavior export_writer(caf::event_based_actor*, export_config cfg) {
  return {
    [cfg](write_atom, int64_t clock, const std::vector<wire_buffer>& shards) -> written_fields {
      try {
        const auto done = cfg.write(clock, shards);
        return {done.version, done.delta, done.bytes, done.rows, done.removed};
      } catch (const std::exception& e) {
        return make_error(errc::checkpoint_failed, e.what());
      }
    },
  };
}

/// How many export versions are asked of the shards and not answered yet, at most, and how many
/// asked or waiting for the writer (their states kept meanwhile).
constexpr std::size_t asks_ahead = 2, versions_held = 3;

/// The version asked or waiting at `clock`, or the end.
std::deque<export_version>::iterator find_version(chief_state& st, int64_t clock) {
  return std::find_if(st.exports.begin(), st.exports.end(),
                      [&](const export_version& v) { return v.clock == clock; });
}

/// Runs what waits for the exports once none is asked, waiting or being written.
void when_idle(self_ptr self) {
  auto& st = self->state;
  if (exports_busy(st) || !st.after_export) return;
  auto next = std::move(st.after_export);
  st.after_export = nullptr;
  next();
}

void skipped(self_ptr self, int64_t clock, const std::string& why) {
  auto& st = self->state;
  log_line("chief", "export version at clock " + std::to_string(clock) + " skipped: " + why);
  st.metrics->write(json_object().add("event", "export_skipped").add("clock", clock)
                      .add("reason", why).add("wall_s", st.elapsed()));
}

/// Version `clock` is `deltas` deltas into its chain (0: full): the versions asked after it count
/// from there.
void renumber(chief_state& st, int64_t clock, int deltas) {
  for (auto& v : st.exports) {
    if (v.clock <= clock) continue;
    v.deltas = deltas = v.since < 0 ? 0 : deltas + 1;
    if (st.export_chain == v.clock) st.export_chain_deltas = v.deltas;
  }
  if (st.export_chain == clock) st.export_chain_deltas = deltas;
}

void ask_version(self_ptr self, int64_t clock);

/// Version `clock` (a delta since `since`, `deltas` into its chain) will not be written: its ask
/// failed (`ask_failed`: the shards that answered the one before can still count from it) or its
/// write did (the next is full). No delta of it is written: the version asked as one is asked
/// again whole, or, its states here already, is not written either.
void not_written(self_ptr self, int64_t clock, int64_t since, int deltas, bool ask_failed) {
  auto& st = self->state;
  if (st.export_chain == clock) {
    st.export_chain = ask_failed ? since : -1;
    st.export_chain_deltas = ask_failed && since >= 0 ? deltas - 1 : 0;
  }
  auto next = std::find_if(st.exports.begin(), st.exports.end(),
                           [&](const export_version& v) { return v.since == clock; });
  if (next == st.exports.end()) return;
  if (!next->answered) {
    next->since = -1;
    next->deltas = 0;
    renumber(st, next->clock, 0);
    ask_version(self, next->clock);
    return;
  }
  const auto dropped = next->clock;
  const auto dropped_since = next->since;
  const auto dropped_deltas = next->deltas;
  st.exports.erase(next);
  skipped(self, dropped, "the version it is a delta of failed");
  not_written(self, dropped, dropped_since, dropped_deltas, false);
}

void write_next(self_ptr self);

/// The version being written is (or failed): the next waiting is written, or more asked.
void export_over(self_ptr self) {
  self->state.export_writing = -1;
  write_next(self);
  maybe_export(self);
  when_idle(self);
}

/// Hands the oldest version to the writer once its states are here and none is being written.
void write_next(self_ptr self) {
  auto& st = self->state;
  if (st.export_writing >= 0 || st.exports.empty() || !st.exports.front().answered) return;
  auto v = std::move(st.exports.front());
  st.exports.pop_front();
  if (!st.export_writer) {
    st.export_writer = self->spawn<caf::detached>(export_writer, st.cfg.exports);
    auto writer = st.export_writer;  // by value: the state is gone when attached functors run
    self->attach_functor([writer] { caf::anon_send_exit(writer, caf::exit_reason::user_shutdown); });
  }
  const auto clock = st.export_writing = v.clock;
  const auto since = v.since;
  const auto deltas = v.deltas;
  auto started = std::chrono::steady_clock::now();
  self->request(st.export_writer, caf::infinite, write_atom::value, clock, std::move(v.states))
    .then(
      [=](uint64_t version, bool delta, uint64_t bytes, uint64_t rows, uint64_t removed) {
        auto& st = self->state;
        // Whole states for a delta (a shard restored since): a full version, the chain's base.
        if (!delta && since >= 0) renumber(st, clock, 0);
        st.metrics->write(json_object().add("event", "export").add("clock", clock)
                            .add("version", static_cast<int64_t>(version))
                            .add("kind", delta ? "delta" : "full").add("bytes", bytes)
                            .add("rows", rows).add("removed", removed)
                            .add("ms", ms_since(started)).add("wall_s", st.elapsed()));
        export_over(self);
      },
      [=](caf::error& err) {
        auto& st = self->state;
        log_line(log_level::warn, "chief", "export version at clock " + std::to_string(clock)
                                             + " failed: " + describe(err)
                                             + "; the next one is full");
        st.metrics->write(json_object().add("event", "export_failed").add("clock", clock)
                            .add("reason", describe(err)).add("wall_s", st.elapsed()));
        not_written(self, clock, since, deltas, false);
        export_over(self);
      });
}

void on_states(self_ptr self, int64_t clock, uint64_t ask, std::vector<wire_buffer> states) {
  auto& st = self->state;
  auto v = find_version(st, clock);
  if (v == st.exports.end() || v->ask != ask) return;  // not written, or asked again since
  v->answered = true;
  v->states = std::move(states);
  write_next(self);
  maybe_export(self);
  when_idle(self);
}

void on_ask_failed(self_ptr self, int64_t clock, uint64_t ask, const caf::error& err) {
  auto& st = self->state;
  auto it = find_version(st, clock);
  if (it == st.exports.end() || it->ask != ask) return;
  // Held longer than a request may wait (a slow run): asked again, unless no worker is left to
  // get there.
  if (err == caf::sec::request_timeout && !st.workers_lost) return ask_version(self, clock);
  const auto since = it->since;
  const auto deltas = it->deltas;
  st.exports.erase(it);
  skipped(self, clock, describe(err) + "; the next one follows");
  not_written(self, clock, since, deltas, true);
  write_next(self);  // one behind it (its states come first, from another path)
  // A shard past it (the global clock lagged): the next one, at once.
  if (is_error(err, errc::checkpoint_clock_passed)) maybe_export(self);
  when_idle(self);
}

/// Asks every shard for the state at `clock` (again: an earlier answer is dropped).
void ask_version(self_ptr self, int64_t clock) {
  auto& st = self->state;
  auto v = find_version(st, clock);
  const auto ask = v->ask = ++st.export_asks;
  const auto since = v->since;
  ask_each<wire_buffer>(
    st.shards.size(),
    [&](std::size_t s) {
      return self->request(st.shards[s], st.cfg.request_timeout, checkpoint_atom::value,
                           snapshot_atom::value, clock, since);
    },
    [=](std::vector<wire_buffer> states) { on_states(self, clock, ask, std::move(states)); },
    [=](const caf::error& err) { on_ask_failed(self, clock, ask, err); });
}

} // namespace

void maybe_export(self_ptr self) {
  auto& st = self->state;
  const auto every = st.cfg.exports.every;
  if (every <= 0 || !st.cfg.exports.write || st.phase != run_phase::training) return;
  auto asked = [&] {
    return std::count_if(st.exports.begin(), st.exports.end(),
                         [](const export_version& v) { return !v.answered; });
  };
  while (st.exports.size() < versions_held && static_cast<std::size_t>(asked()) < asks_ahead) {
    // The next multiple of `every` past both the global clock and the newest one asked; the
    // run's last clock is the export after the run's.
    const auto clock = (std::max(st.global_clock(), st.last_export) / every + 1) * every;
    if (clock >= st.cfg.steps) return;
    // A delta of the version asked before, until every full_every-th one.
    export_version v;
    v.clock = clock;
    if (st.export_chain >= 0 && st.export_chain_deltas + 1 < st.cfg.exports.full_every) {
      v.since = st.export_chain;
      v.deltas = st.export_chain_deltas + 1;
    }
    st.export_chain = st.last_export = clock;
    st.export_chain_deltas = v.deltas;
    st.exports.push_back(std::move(v));
    ask_version(self, clock);
  }
}

bool exports_busy(const chief_state& st) {
  // A state asked is of a clock before the last, which the shards reach unless every worker
  // was lost: it comes, and is written; one waiting is written next (export_over).
  return st.export_writing >= 0
         || std::any_of(st.exports.begin(), st.exports.end(), [&](const export_version& v) {
              return v.answered || !st.workers_lost;
            });
}

void after_exports(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  if (!exports_busy(st)) return then();
  if (auto before = std::move(st.after_export))
    st.after_export = [before, then] {
      before();
      then();
    };
  else
    st.after_export = std::move(then);
}

} // namespace actorps::chief_detail
