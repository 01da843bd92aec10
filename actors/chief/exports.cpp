// Export versions while training (--export-every): the chief asks every shard, ahead of time,
// for its state at the next export clock (the shards hold the request until their min clock
// reaches it, as for a checkpoint off the schedule, and keep nothing), then hands the states to
// the export writer, an actor of its own that writes the version while training goes on
// (actors/serving/export_versions.hpp). A delta version's request names the clock of the
// version before it, and each shard sends only the rows changed since (shard_snapshots.cpp).
// The next version is asked as soon as one's states are handed to the writer, so that the
// shards get the request ahead of its clock; states that come while another version is written
// wait, and no more is asked meanwhile: every version asked is written, and each delta's
// predecessor is the version asked before it. After a version that failed, the next is full.
// The final steps wait for the versions, so that a run's versions are on disk when it reports.
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

#include <caf/all.hpp>

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

void write_version(self_ptr self, int64_t clock, int64_t since, std::vector<wire_buffer> shards);

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

/// The version being written is (or failed): the one waiting is written, or the next asked.
void export_over(self_ptr self, int64_t clock, bool failed) {
  auto& st = self->state;
  st.export_writing = false;
  if (failed && st.export_chain == clock) st.export_chain = -1;  // the next is full
  if (st.export_pending >= 0) {
    const auto next = std::exchange(st.export_pending, -1);
    auto states = std::move(st.export_pending_states);
    if (failed && st.export_pending_since == clock) {  // a delta of the version that failed
      st.export_chain = -1;
      skipped(self, next, "the version it is a delta of failed; the next one is full");
    } else {
      write_version(self, next, st.export_pending_since, std::move(states));
    }
  }
  maybe_export(self);
  when_idle(self);
}

/// Hands the states of `clock` (a delta since `since`, or whole with -1) to the writer, or keeps
/// them until the version being written is.
void write_version(self_ptr self, int64_t clock, int64_t since, std::vector<wire_buffer> shards) {
  auto& st = self->state;
  if (st.export_writing) {  // written next; nothing more is asked until then
    st.export_pending = clock;
    st.export_pending_since = since;
    st.export_pending_states = std::move(shards);
    return;
  }
  if (!st.export_writer) {
    st.export_writer = self->spawn<caf::detached>(export_writer, st.cfg.exports);
    auto writer = st.export_writer;  // by value: the state is gone when attached functors run
    self->attach_functor([writer] { caf::anon_send_exit(writer, caf::exit_reason::user_shutdown); });
  }
  st.export_writing = true;
  auto started = std::chrono::steady_clock::now();
  self->request(st.export_writer, caf::infinite, write_atom::value, clock, std::move(shards))
    .then(
      [=](uint64_t version, bool delta, uint64_t bytes, uint64_t rows, uint64_t removed) {
        auto& st = self->state;
        // Whole states for a delta (a shard restored since): a full version, the chain's base.
        if (!delta && st.export_chain == clock) st.export_chain_deltas = 0;
        st.metrics->write(json_object().add("event", "export").add("clock", clock)
                            .add("version", static_cast<int64_t>(version))
                            .add("kind", delta ? "delta" : "full").add("bytes", bytes)
                            .add("rows", rows).add("removed", removed)
                            .add("ms", ms_since(started)).add("wall_s", st.elapsed()));
        export_over(self, clock, false);
      },
      [=](caf::error& err) {
        auto& st = self->state;
        log_line(log_level::warn, "chief", "export version at clock " + std::to_string(clock)
                                             + " failed: " + describe(err)
                                             + "; the next one is full");
        st.metrics->write(json_object().add("event", "export_failed").add("clock", clock)
                            .add("reason", describe(err)).add("wall_s", st.elapsed()));
        export_over(self, clock, true);
      });
}

} // namespace

void maybe_export(self_ptr self) {
  auto& st = self->state;
  const auto every = st.cfg.exports.every;
  if (every <= 0 || !st.cfg.exports.write || st.export_asked >= 0 || st.export_pending >= 0
      || st.phase != run_phase::training)
    return;
  // The next multiple of `every` past both the global clock and the newest one asked; the run's
  // last clock is the export after the run's.
  const auto clock = (std::max(st.global_clock(), st.last_export) / every + 1) * every;
  if (clock >= st.cfg.steps) return;
  // A delta of the version handed last, until every full_every-th one.
  const auto since = st.export_chain >= 0 && st.export_chain_deltas + 1 < st.cfg.exports.full_every
                       ? st.export_chain
                       : -1;
  st.export_asked = st.last_export = clock;
  ask_each<wire_buffer>(
    st.shards.size(),
    [&](std::size_t s) {
      return self->request(st.shards[s], st.cfg.request_timeout, checkpoint_atom::value,
                           snapshot_atom::value, clock, since);
    },
    [=](std::vector<wire_buffer> shards) {
      auto& st = self->state;
      if (st.export_asked != clock) return;
      st.export_asked = -1;
      if (since >= 0 && since != st.export_chain) {  // the version it builds on failed
        skipped(self, clock, "the version it is a delta of failed; the next one is full");
      } else {
        st.export_chain = clock;
        st.export_chain_deltas = since < 0 ? 0 : st.export_chain_deltas + 1;
        write_version(self, clock, since, std::move(shards));
      }
      // The next one asked now, while the shards are at this clock: ahead of them, even when
      // the workers' reports come in batches (other processes) and the global clock lags.
      maybe_export(self);
      when_idle(self);
    },
    [=](const caf::error& err) {
      auto& st = self->state;
      if (st.export_asked != clock) return;
      st.export_asked = -1;
      // Held longer than a request may wait (a slow run): asked again.
      if (err == caf::sec::request_timeout) {
        st.last_export = clock - 1;
        maybe_export(self);
      } else {
        skipped(self, clock, describe(err) + "; the next one follows");
        // A shard past it (the global clock lagged): the next one, at once, a delta of the same
        // version (the shards that answered this one can still count from it).
        if (is_error(err, errc::checkpoint_clock_passed)) maybe_export(self);
      }
      when_idle(self);
    });
}

bool exports_busy(const chief_state& st) {
  // A state asked is of a clock before the last, which the shards reach unless every worker
  // was lost: it comes, and is written; one waiting is written next (export_over).
  return (st.export_asked >= 0 && !st.workers_lost) || st.export_writing;
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
