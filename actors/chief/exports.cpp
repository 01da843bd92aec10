// Export versions while training (--export-every): the chief asks every shard, ahead of time,
// for its whole state at the next export clock (the shards hold the request until their min
// clock reaches it, as for a checkpoint off the schedule, and keep nothing), then hands the
// states to the export writer, an actor of its own that writes the version (full or delta:
// actors/serving/export_versions.hpp) while training goes on. One state is asked and one
// version written at a time; one whose states come while another is being written waits (one
// at most: a newer one replaces it, which is then skipped), and the final steps wait for the
// versions, so that a run's versions are on disk when it reports.
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

#include <caf/all.hpp>

#include <utility>

namespace actorps::chief_detail {

namespace {

/// The writer: calls `write` for each (write, clock, shard states), one after the other, in a
/// thread of its own (the files are written and fsynced there).
caf::behavior export_writer(caf::event_based_actor*, export_config cfg) {
  return {
    [cfg](write_atom, int64_t clock,
          const std::vector<wire_buffer>& shards) -> caf::result<uint64_t, bool, uint64_t> {
      try {
        const auto done = cfg.write(clock, shards);
        return {done.version, done.delta, done.bytes};
      } catch (const std::exception& e) {
        return make_error(errc::checkpoint_failed, e.what());
      }
    },
  };
}

void write_version(self_ptr self, int64_t clock, std::vector<wire_buffer> shards);

/// Runs what waits for the exports once none is asked, waiting or being written.
void when_idle(self_ptr self) {
  auto& st = self->state;
  if (exports_busy(st) || !st.after_export) return;
  auto next = std::move(st.after_export);
  st.after_export = nullptr;
  next();
}

void export_over(self_ptr self) {
  auto& st = self->state;
  st.export_writing = false;
  if (st.export_pending >= 0) {
    const auto clock = std::exchange(st.export_pending, -1);
    return write_version(self, clock, std::move(st.export_pending_states));
  }
  when_idle(self);
}

void write_version(self_ptr self, int64_t clock, std::vector<wire_buffer> shards) {
  auto& st = self->state;
  if (st.export_writing) {  // written next; a newer one that comes first replaces it
    if (st.export_pending >= 0) {
      log_line("chief", "export version at clock " + std::to_string(st.export_pending)
                          + " skipped: the one before it is still being written, and the "
                            "version at clock " + std::to_string(clock) + " is due");
      st.metrics->write(json_object().add("event", "export_skipped")
                          .add("clock", st.export_pending).add("wall_s", st.elapsed()));
    }
    st.export_pending = clock;
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
      [=](uint64_t version, bool delta, uint64_t bytes) {
        auto& st = self->state;
        st.metrics->write(json_object().add("event", "export").add("clock", clock)
                            .add("version", static_cast<int64_t>(version))
                            .add("kind", delta ? "delta" : "full").add("bytes", bytes)
                            .add("ms", ms_since(started)).add("wall_s", st.elapsed()));
        export_over(self);
      },
      [=](caf::error& err) {
        auto& st = self->state;
        log_line(log_level::warn, "chief", "export version at clock " + std::to_string(clock)
                                             + " failed: " + describe(err));
        st.metrics->write(json_object().add("event", "export_failed").add("clock", clock)
                            .add("reason", describe(err)).add("wall_s", st.elapsed()));
        export_over(self);
      });
}

} // namespace

void maybe_export(self_ptr self) {
  auto& st = self->state;
  const auto every = st.cfg.exports.every;
  if (every <= 0 || !st.cfg.exports.write || st.export_asked >= 0
      || st.phase != run_phase::training)
    return;
  // The next multiple of `every` past both the global clock and the newest one asked; the run's
  // last clock is the export after the run's.
  const auto clock = (std::max(st.global_clock(), st.last_export) / every + 1) * every;
  if (clock >= st.cfg.steps) return;
  st.export_asked = st.last_export = clock;
  ask_each<wire_buffer>(
    st.shards.size(),
    [&](std::size_t s) {
      return self->request(st.shards[s], st.cfg.request_timeout, checkpoint_atom::value,
                           snapshot_atom::value, clock);
    },
    [=](std::vector<wire_buffer> shards) {
      if (self->state.export_asked != clock) return;
      self->state.export_asked = -1;
      write_version(self, clock, std::move(shards));
      // The next one asked now, while the shards are at this clock: ahead of them, even when
      // the workers' reports come in batches (other processes) and the global clock lags.
      maybe_export(self);
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
        log_line("chief", "export version at clock " + std::to_string(clock) + " skipped: "
                            + describe(err) + "; the next one follows");
        st.metrics->write(json_object().add("event", "export_skipped").add("clock", clock)
                            .add("reason", describe(err)).add("wall_s", st.elapsed()));
        // A shard past it (the global clock lagged): the next one, at once.
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
