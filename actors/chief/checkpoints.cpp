// The chief's side of checkpoints: every `every` global clocks (and once training is over) it
// asks the disk actor for a fresh directory, asks every shard for its file (the state it kept
// when its min clock reached that clock: each shard writes it, or, with --checkpoint-writer
// chief, sends its bytes for the chief's disk actor to write), then has the disk actor write
// run.capnp and, last, the manifest. A failed checkpoint is logged, counted in the summary (a
// run none of whose checkpoints succeeded, or whose final one failed, exits non-zero), its
// directory removed, and the previous one stays; training never waits for a checkpoint.
// Between full checkpoints (--full-checkpoint-every) it asks for deltas of the newest one: the
// shards cut, from the state they kept, the sparse rows changed since (CHECKPOINT_FORMAT.md).
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"
#include "actors/protocol/model_spec.hpp"
#include "actors/storage/checkpoint_store.hpp"

#include <csignal>
#include <cstdio>

namespace actorps::chief_detail {

namespace {

/// How a data position counts a worker's minibatches in epochs (DataPosition).
int64_t batches_per_epoch(const chief_state& st, int32_t w) {
  auto size = data_shard::rows_of(st.cfg.train_rows, w, st.cfg.spec.workers);
  return std::max<int64_t>(1, size / st.cfg.batch);
}

/// Where worker w's next batch starts in a streamed directory: the file and the rows of the
/// worker's part of it read before (its batches cut its parts of the files as one stream, the
/// last batch of a pass short: clocked_batches; or dropped, for a dense model's `whole`
/// batches: csv_batches).
void set_file_position(const std::vector<stream_file>& files, int batch, int64_t batches,
                       bool whole, data_position& p) {
  const auto w = static_cast<std::size_t>(p.worker);
  int64_t rows = 0;
  for (const auto& f : files) rows += w < f.rows.size() ? f.rows[w] : 0;
  const int64_t per_pass = whole ? rows / batch : (rows + batch - 1) / batch;
  if (per_pass == 0) return;
  // A pass read to its very last row (as a followed stream may be) is at the end of the last
  // file, not back at the start of the first.
  int64_t row = batches * batch == rows ? rows : batches % per_pass * batch;
  for (std::size_t k = 0; k < files.size(); ++k) {
    const auto here = w < files[k].rows.size() ? files[k].rows[w] : 0;
    if (row < here || k + 1 == files.size()) {
      p.file = static_cast<int32_t>(k);
      p.file_row = row;
      return;
    }
    row -= here;
  }
}

wire_buffer run_file(const chief_state& st, int64_t clock) {
  run_checkpoint run;
  run.spec = st.cfg.spec;
  run.clock = clock;
  run.batch = st.cfg.batch;
  run.steps = st.cfg.spec.total_clocks;  // the shards' (a followed stream's end leaves it)
  run.wall_s = st.elapsed();
  // where each worker is in its data (its clock, unless a replacement or a rollback moved it),
  // and the rows behind the model's state at `clock` (what a resumed run counts from)
  for (int32_t w = 0; w < st.cfg.spec.workers; ++w) {
    auto per_epoch = batches_per_epoch(st, w);
    auto batch = st.batches_at(w, clock);
    run.positions.push_back({w, clock, batch / per_epoch, batch % per_epoch});
    run.samples += batch * st.cfg.batch;
    if (!st.cfg.checkpoints.files.empty())
      set_file_position(st.cfg.checkpoints.files, st.cfg.batch, batch,
                        st.cfg.source.what == data_source::kind::csv, run.positions.back());
  }
  run.run_id = st.cfg.checkpoints.run_id;
  run.dataset = st.cfg.checkpoints.dataset;
  run.train_rows = st.cfg.train_rows;
  run.files = st.cfg.checkpoints.files;
  // after a change of workers: the rows trained before it, and what each worker has not
  // trained yet (what a resume goes on with)
  if (!st.plans.empty()) {
    run.samples += st.batches_before_plans * st.cfg.batch;
    for (int32_t w = 0; w < st.cfg.spec.workers; ++w)
      run.plans.push_back(plan_from(st.plans[static_cast<std::size_t>(w)],
                                    std::min(st.batches_at(w, clock), st.batches_planned(w))));
  }
  return encode_run_checkpoint(run);
}

void checkpoint_over(self_ptr self) {
  auto& st = self->state;
  st.checkpoint_in_flight = false;
  maybe_checkpoint(self);  // one that came due while this one was being written, first
  if (st.checkpoint_in_flight || !st.after_checkpoint) return;
  auto next = std::move(st.after_checkpoint);
  st.after_checkpoint = nullptr;
  next();
}

using file_written = std::function<void(const file_record&)>;
using files_written = std::function<void(std::vector<file_record>)>;
using write_failed = std::function<void(const caf::error&)>;

/// --checkpoint-writer shards: each shard writes its file into `dir` itself (with `since` >= 0,
/// the changes since that clock's checkpoint).
void shards_write(self_ptr self, const std::string& dir, int64_t clock, int64_t since,
                  file_written each, files_written done, write_failed failed) {
  const auto& st = self->state;
  ask_each<file_record>(
    st.shards.size(),
    [&](std::size_t s) {
      return self->request(st.shards[s], st.cfg.request_timeout, checkpoint_atom::value, dir,
                           clock, since);
    },
    [=](std::size_t, const file_record& rec) { each(rec); }, std::move(done), std::move(failed));
}

/// --checkpoint-writer chief: the shards send their files' bytes, the chief's disk actor writes
/// them one after the other.
void chief_writes(self_ptr self, const std::string& dir, int64_t clock, int64_t since,
                  file_written each, files_written done, write_failed failed) {
  const auto& st = self->state;
  ask_each<wire_buffer>(
    st.shards.size(),
    [&](std::size_t s) {
      return self->request(st.shards[s], st.cfg.request_timeout, checkpoint_atom::value, clock,
                           since);
    },
    [=](std::vector<wire_buffer> files) {
      const auto& st = self->state;
      ask_each<file_record>(
        files.size(),
        [&](std::size_t s) {
          auto path = dir + "/" + shard_file_name(static_cast<int32_t>(s));
          return self->request(st.io, caf::infinite, write_atom::value, path, files[s]);
        },
        [=](std::size_t, const file_record& rec) { each(rec); }, done, failed);
    },
    failed);
}

} // namespace

int64_t next_checkpoint_since(const chief_state& st) {
  // A delta of the chain's newest link, until a full one is due.
  return st.chain.predecessor_clock >= 0 && st.chain_deltas + 1 < st.cfg.checkpoints.full_every
           ? st.chain.predecessor_clock
           : -1;
}

void abandon_checkpoint(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (!st.checkpoint_in_flight) return;
  ++st.checkpoint_generation;  // its late answers, if any, change nothing
  log_line("chief", "the checkpoint in flight is abandoned (" + why + "); a newer one follows");
  checkpoint_over(self);
}

void take_checkpoint(self_ptr self, int64_t clock, std::function<void()> then) {
  auto& st = self->state;
  st.checkpoint_in_flight = true;
  auto generation = ++st.checkpoint_generation;
  auto started = std::chrono::steady_clock::now();
  auto abandoned = [=] { return self->state.checkpoint_generation != generation; };
  auto prepared = std::make_shared<std::string>();  // its directory, once there is one
  // One checkpoint is in flight at a time: the chain is the one this checkpoint continues.
  const int64_t since = next_checkpoint_since(st);
  auto failed = [=](const caf::error& err) {
    if (abandoned()) return;
    auto& st = self->state;
    if (!prepared->empty()) self->send(st.io, discard_atom::value, *prepared);
    // Not a failure: a newer checkpoint follows, no work lost.
    auto skipped = [&](const std::string& why, bool go_on) {
      log_line("chief", "checkpoint at clock " + std::to_string(clock) + " skipped: " + why
                          + "; a newer one follows");
      st.metrics->write(json_object().add("event", "checkpoint_skipped").add("clock", clock)
                          .add("wall_s", st.elapsed()));
      if (go_on) then();
      checkpoint_over(self);
    };
    if (is_error(err, errc::checkpoint_superseded))
      return skipped("the shards are past it", true);  // they keep fewer ahead than ran
    if (st.cfg.replicas > 0 && primary_gone(err))
      // Asked of a primary as it died (its answer came before its down message, which would
      // have abandoned the checkpoint): its standby serves now. While finishing, the fail-over
      // that follows starts the final steps over (standbys.cpp).
      return skipped("a primary was lost (" + describe(err) + ")",
                     st.phase != run_phase::finishing);
    if (is_error(err, errc::checkpoint_clock_passed)) {
      // Asked off the schedule, too late for a shard: the one who asked asks again, later.
      then();
      checkpoint_over(self);
      return;
    }
    ++st.checkpoint_failures;
    st.checkpoint_error = describe(err);
    // the shards write into the chief's directory: another host's filesystem lacks it
    const bool hint = st.cfg.remote && st.cfg.checkpoints.writer == checkpoint_writer::shards;
    const bool rooted = is_error(err, errc::outside_checkpoint_root);
    log_line("chief", "checkpoint at clock " + std::to_string(clock) + " failed: " + describe(err)
                        + (prepared->empty() ? " (the previous one stays)"
                                             : " (its directory is removed; the previous one stays)")
                        + (hint && rooted ? "; give every ps task this --checkpoint-dir (actorps "
                                            "run does), or"
                                          : (hint ? ";" : ""))
                        + (hint ? " without a filesystem shared by the chief and every ps task, "
                                  "use --checkpoint-writer chief"
                                : ""));
    st.metrics->write(json_object().add("event", "checkpoint_failed").add("clock", clock)
                        .add("reason", describe(err)).add("wall_s", st.elapsed()));
    then();
    checkpoint_over(self);
  };
  auto commit = [=](const std::string& dir, std::vector<file_record> files) {
    auto& st = self->state;
    // A shard file of changes only makes it a delta of the chain's newest link (a shard that
    // cannot tell its changes, e.g. restored since, writes its whole state: still a link).
    const bool delta = std::any_of(files.begin(), files.end(),
                                   [](const file_record& f) { return f.delta_since >= 0; });
    uint64_t bytes = 0;
    for (const auto& f : files) {
      bytes += f.bytes;
      if (f.delta_since >= 0
          && (st.chain.predecessor_clock < 0 || f.delta_since > st.chain.predecessor_clock)) {
        return failed(make_error(errc::checkpoint_failed,
                                 f.name + " holds the changes since clock "
                                   + std::to_string(f.delta_since)
                                   + ", which no checkpoint of this run's chain ends at"));
      }
    }
    self->request(st.io, caf::infinite, commit_atom::value, dir, clock, std::move(files),
                  run_file(st, clock), static_cast<int32_t>(st.cfg.checkpoints.keep),
                  delta ? st.chain : checkpoint_link{})
      .then(
        [=](std::string& manifest_sha256) {
          if (abandoned()) return;  // complete on disk, but the run went back before it
          auto& st = self->state;
          if (delta) {
            st.chain.predecessor_clock = clock;
            st.chain.predecessor_sha256 = manifest_sha256;
            ++st.chain_deltas;
          } else {
            st.chain = {clock, manifest_sha256, clock, manifest_sha256};
            st.chain_deltas = 0;
          }
          // No delta counts from before it now: what the shards kept for that goes. They are
          // told what the next one will be, to keep at its clock only what it will hold.
          for (const auto& shard : st.shards)
            if (shard)
              self->send(shard, checkpoint_atom::value, commit_atom::value, clock,
                         next_checkpoint_since(st));
          st.last_checkpoint = std::max(st.last_checkpoint, clock);
          // The shards keep a clock once every live worker has pushed it; a worker in another
          // process reports its clocks in batches (worker.cpp), so some may still be on their
          // way: they count as done, and a run stopped at this checkpoint says so.
          for (std::size_t w = 0; w < st.clocks.size(); ++w)
            if (st.live[w]) st.clocks[w] = std::max(st.clocks[w], clock);
          ++st.checkpoints;
          st.metrics->write(json_object().add("event", "checkpoint").add("clock", clock)
                              .add("dir", dir).add("kind", delta ? "delta" : "full")
                              .add("bytes", bytes).add("ms", ms_since(started))
                              .add("wall_s", st.elapsed()));
          then();
          checkpoint_over(self);
        },
        failed);
  };
  self->request(st.io, caf::infinite, prepare_atom::value, st.cfg.checkpoints.dir, clock)
    .then(
      [=](std::string& dir) {
        if (abandoned()) return;
        *prepared = dir;
        auto crash_hook = [=](const file_record& rec) {
          if (abandoned() || self->state.cfg.checkpoints.crash_at != clock) return;
          // fault injection: a crash between the shard files
          log_line("chief", "fault injection: crashing while checkpoint " + dir + " has "
                              + rec.name + " and no manifest");
          std::fflush(nullptr);
          std::raise(SIGKILL);
        };
        auto written = [=](std::vector<file_record> files) {
          if (!abandoned()) commit(dir, std::move(files));
        };
        if (self->state.cfg.checkpoints.writer == checkpoint_writer::chief)
          chief_writes(self, dir, clock, since, crash_hook, written, failed);
        else
          shards_write(self, dir, clock, since, crash_hook, written, failed);
      },
      failed);
}

void maybe_checkpoint(self_ptr self) {
  auto& st = self->state;
  auto every = st.cfg.checkpoints.every;
  auto running = st.phase == run_phase::training || st.phase == run_phase::finishing;
  // With every worker lost the shards reach no further clock than they have.
  if (!st.io || every <= 0 || st.checkpoint_in_flight || !running || st.workers_lost) return;
  auto global = std::min(st.global_clock(), st.cfg.steps);
  if (global < st.next_checkpoint) return;
  // The shards keep their state at the two newest checkpoint clocks they reached: take the
  // oldest one not written yet that they still hold, so that a checkpoint that came due while
  // another was being written is not skipped. The run's last clock is final_checkpoint's.
  auto newest = global / every * every;
  auto clock = std::max(st.next_checkpoint, newest - every);
  if (clock >= st.cfg.steps) return;
  st.next_checkpoint = clock + every;
  take_checkpoint(self, clock, [] {});
}

void final_checkpoint(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  // past cfg.steps when a replaced worker trained its predecessor's rest at the end
  auto clock = st.final_clock();
  if (!st.io || st.last_checkpoint >= clock) return then();
  if (st.checkpoint_in_flight) {
    st.after_checkpoint = [=] { final_checkpoint(self, then); };
    return;
  }
  auto failures = st.checkpoint_failures;
  take_checkpoint(self, clock, [=] {
    // The final state is not on disk: the run must not pass for saved (summary.cpp).
    self->state.final_checkpoint_failed = self->state.checkpoint_failures > failures;
    then();
  });
}

std::vector<int64_t> data_offsets_in(const chief_state& st, const loaded_checkpoint& ckpt) {
  std::vector<int64_t> out(static_cast<std::size_t>(st.cfg.spec.workers), 0);
  auto run = decode_run_checkpoint(ckpt.run_bytes);  // verified when it was loaded
  if (!run) return out;
  // epochs of the checkpoint's training set: a streamed directory may have grown since
  const int64_t rows = run->train_rows > 0 ? run->train_rows : st.cfg.train_rows;
  for (const auto& p : run->positions) {
    if (p.worker < 0 || p.worker >= st.cfg.spec.workers) continue;
    const auto per_epoch = std::max<int64_t>(
      1, data_shard::rows_of(rows, p.worker, st.cfg.spec.workers) / st.cfg.batch);
    out[p.worker] = p.clock - (p.epoch * per_epoch + p.batch_in_epoch);
  }
  return out;
}

void restore_shards(self_ptr self, std::shared_ptr<const loaded_checkpoint> ckpt,
                    std::function<void()> done, std::function<void(const caf::error&)> failed) {
  if (!failed)
    failed = [=](const caf::error& err) { fail_run(self, "restoring the shards failed", err); };
  auto& st = self->state;
  auto restored = shard_restore_files(st.cfg.spec, ckpt.get());
  if (!restored) return fail_run(self, "restoring the shards failed", restored.error());
  auto files = std::move(*restored);
  ask_each<caf::ok_atom>(
    st.shards.size(),
    [&](std::size_t s) {
      return self->request(st.shards[s], st.cfg.request_timeout, restore_atom::value, files[s],
                           st.incarnation);
    },
    [=](std::vector<caf::ok_atom>) { done(); },
    [=](caf::error& err) { failed(err); });
}

} // namespace actorps::chief_detail
