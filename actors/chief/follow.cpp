// A followed stream (--follow): the training directory grows while the run goes on, and the run
// ends when told to (the stop file, or a stop signal), not at a clock known at the start.
//
// A stream_watch thread (data/stream_watch.hpp) counts each new file's rows per worker and sends
// them here; the files join the run's (what checkpoints record, so that --resume goes on from
// the same place). The workers compute a clock only once the chief grants its minibatch: the
// clock of batch b once b + 1 < the grant (the next clock's keys go with the push), the grant
// being the batches every worker's part of the counted files holds, and at most follow_window
// past the global clock. Batches, not clocks: a replacement that resumed its predecessor's
// position runs behind the others (its clock c trains batch c - offset), and trains its part
// to the same batch as they do. So no worker passes the grant, and a stop ends the run at it:
// each worker trains its batches up to there (at most a window), the final checkpoint and
// evaluation follow, and the summary, as at the end of any run. In sync mode a stop and
// --resume give exactly the clocks of a run that never stopped.
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

namespace actorps::chief_detail {

namespace {

/// Batches granted past the global clock at most: what a stop still trains.
constexpr int64_t follow_window = 64;

/// The minibatches every worker's part of the files counted so far holds (the stream is read
/// once: no epochs).
int64_t stream_batches(const chief_state& st) {
  int64_t out = std::numeric_limits<int64_t>::max();
  for (int32_t w = 0; w < st.cfg.spec.workers; ++w) {
    const auto part = static_cast<std::size_t>(w);
    int64_t rows = 0;
    for (const auto& f : st.cfg.checkpoints.files) rows += part < f.rows.size() ? f.rows[part] : 0;
    out = std::min(out, rows / st.cfg.batch);
  }
  return out;
}

/// The grant the counted files and the global clock allow now (never past the run's end), in
/// minibatches: a worker's clock c trains its batch c - data_offset.
int64_t grant_now(const chief_state& st) {
  const auto clock = std::max(st.global_clock(), st.start_clock);
  return std::min({stream_batches(st), clock + follow_window, st.cfg.steps});
}

} // namespace

int64_t follow_grant(self_ptr self) {
  auto& st = self->state;
  if (!st.cfg.source.follow) return -1;
  st.follow_until = std::max(st.follow_until, grant_now(st));
  return st.follow_until;
}

void start_following(self_ptr self) {
  auto& st = self->state;
  if (!st.cfg.source.follow || st.watch) return;
  auto chief = caf::actor_cast<chief_actor>(self);
  const auto workers = st.cfg.spec.workers;
  stream_watch::callbacks on;
  on.grew = [chief, workers](std::vector<stream_file> files) {
    std::vector<std::string> names;
    std::vector<int64_t> numbers;
    for (auto& f : files) {
      names.push_back(std::move(f.name));
      numbers.push_back(static_cast<int64_t>(f.bytes));
      f.rows.resize(static_cast<std::size_t>(workers), 0);
      numbers.insert(numbers.end(), f.rows.begin(), f.rows.end());
    }
    caf::anon_send(chief, stream_atom::value, std::move(names), std::move(numbers));
  };
  on.stop = [chief](const std::string& why) {
    caf::anon_send(chief, interrupt_atom::value, why);
  };
  const auto& files = st.cfg.checkpoints.files;
  try {
    st.watch = std::make_unique<stream_watch>(st.cfg.source, workers,
                                              files.empty() ? "" : files.back().name,
                                              st.cfg.stop_file, std::move(on));
  } catch (const std::exception& e) {
    return fail_run(self, "following the stream failed",
                    make_error(errc::invalid_spec, std::string(e.what())));
  }
  log_line("chief", "following " + st.cfg.source.train_path
                      + (st.watch->notified() ? " (inotify)"
                                              : " (no inotify: looking once a second)")
                      + (st.cfg.stop_file.empty() ? "" : "; the stop file is " + st.cfg.stop_file)
                      + "; the data holds clock " + std::to_string(stream_batches(st)));
}

void grant_clocks(self_ptr self) {
  auto& st = self->state;
  if (st.follow_until < 0 || st.stream_ended || st.phase != run_phase::training) return;
  const auto until = grant_now(st);
  // In steps of half a window, not every clock: a message per worker now and then.
  if (until <= st.follow_until
      || (until - st.follow_until < follow_window / 2 && until < stream_batches(st)))
    return;
  st.follow_until = until;
  for (auto& w : st.workers)
    if (w) self->send(w, stream_atom::value, until, false);
}

void on_stream_grew(self_ptr self, const std::vector<std::string>& names,
                    const std::vector<int64_t>& numbers) {
  auto& st = self->state;
  const auto workers = static_cast<std::size_t>(st.cfg.spec.workers);
  if (!st.cfg.source.follow || st.stream_ended || st.phase == run_phase::stopping) return;
  if (numbers.size() != names.size() * (1 + workers)) {
    log_line(log_level::warn, "chief", "a stream message of " + std::to_string(names.size())
                                         + " files and " + std::to_string(numbers.size())
                                         + " numbers: dropped");
    return;
  }
  int64_t rows = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto at = numbers.begin() + static_cast<std::ptrdiff_t>(i * (1 + workers));
    stream_file f{names[i], static_cast<uint64_t>(*at), {at + 1, at + 1 + workers}};
    for (auto r : f.rows) rows += r;
    st.cfg.checkpoints.files.push_back(std::move(f));
  }
  st.cfg.train_rows += rows;
  const auto clocks = stream_batches(st);
  log_line("chief", "stream: " + names.back()
                      + (names.size() > 1 ? " and " + std::to_string(names.size() - 1)
                                              + " more" : "")
                      + ", " + std::to_string(rows) + " rows: the data holds clock "
                      + std::to_string(clocks));
  st.metrics->write(json_object()
                      .add("event", "stream")
                      .add("files", names)
                      .add("rows", rows)
                      .add("clocks", clocks)
                      .add("wall_s", st.elapsed()));
  grant_clocks(self);
}

bool end_stream(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (st.follow_until < 0 || st.stream_ended || st.phase != run_phase::training) return false;
  st.stream_ended = true;
  // No worker has passed the grant (the clock of batch b once b + 1 < it): each reaches it, a
  // replacement behind the others (data_offset) that many clocks later.
  const auto end = std::min(st.follow_until, st.cfg.steps);
  st.cfg.steps = end;
  log_line("chief", why + ": the stream ends at clock " + std::to_string(end)
                      + " (the workers train their batches up to there)");
  st.metrics->write(json_object()
                      .add("event", "stream_end")
                      .add("clock", end)
                      .add("by", why)
                      .add("wall_s", st.elapsed()));
  for (auto& w : st.workers)
    if (w) self->send(w, stream_atom::value, end, true);
  return true;
}

} // namespace actorps::chief_detail
