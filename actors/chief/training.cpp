// Training as the chief sees it: the workers' reports (one per finished clock) move the global
// clock, which makes evaluations, planned kills and checkpoints due; the progress line; the
// end, once every live worker is done.
#include "actors/chief/state.hpp"
#include "actors/protocol/log.hpp"

#include <algorithm>
#include <cstdio>

namespace actorps::chief_detail {

namespace {

/// Whether the current message comes from the actor now in charge of worker w (reports of a
/// stopped or replaced one may still be in the mailbox).
bool from_current_worker(self_ptr self, int32_t w) {
  auto& st = self->state;
  if (w < 0 || w >= static_cast<int32_t>(st.workers.size()) || !st.workers[w]) return false;
  return caf::actor_cast<caf::actor_addr>(self->current_sender()) == st.workers[w].address();
}

/// Counts a report; false when it is not from a worker in charge.
bool count_report(self_ptr self, const train_report& r) {
  auto& st = self->state;
  if (!from_current_worker(self, r.worker)) return false;
  st.backends.insert(r.backend);
  st.clocks[r.worker] = std::max(st.clocks[r.worker], r.clock + 1);
  st.last_loss[r.worker] = r.loss;
  st.samples += r.samples;
  st.max_staleness = std::max(st.max_staleness, r.staleness);
  st.metrics->write(json_object()
                      .add("event", "train")
                      .add("worker", r.worker)
                      .add("clock", r.clock)
                      .add("loss", r.loss)
                      .add("samples", r.samples)
                      .add("staleness", r.staleness)
                      .add("newest_clock", r.newest_clock)
                      .add("backend", r.backend)
                      .add("wall_s", st.elapsed()));
  return true;
}

} // namespace

std::string backends_text(const chief_state& st) {
  std::string out;
  for (const auto& b : st.backends) out += (out.empty() ? "" : "+") + b;
  return out.empty() ? to_string(st.cfg.backend) : out;
}

namespace {

/// A change of shards whose rows are being copied ahead: the progress line says so.
std::string copying_text(const chief_state& st) {
  if (st.copy.generation == 0 || st.copy.generation != st.resize_generation) return "";
  const bool small = st.copy.bytes < (uint64_t{1} << 20);
  return " | resize at clock " + std::to_string(st.copy.clock) + ": "
         + std::to_string(st.copy.bytes >> (small ? 10 : 20)) + (small ? " KiB" : " MiB")
         + " copied ahead";
}

} // namespace

std::string progress_text(const chief_state& st) {
  char buf[256];
  auto clock = st.global_clock();
  auto elapsed = st.elapsed();
  double loss = 0;
  int n = 0;
  for (std::size_t w = 0; w < st.last_loss.size(); ++w)
    if (st.live[w]) loss += st.last_loss[w], ++n;
  const double epoch = st.epoch_at(clock);
  // A followed stream's length is known once it ends.
  const auto total = st.follow_until >= 0 && !st.stream_ended ? std::string("stream")
                                                               : std::to_string(st.cfg.steps);
  const double rate = elapsed > 0 ? st.samples / elapsed : 0.0;
  // With sparse tables, their rows over every shard at the last evaluation (record_tables).
  char rows[32] = "";
  if (st.last_sparse_rows >= 0)
    std::snprintf(rows, sizeof rows, " rows %lld", static_cast<long long>(st.last_sparse_rows));
  if (st.last_auc >= 0) {
    // A binary model's test figures (AUC, GAUC with --gauc-group, calibration) come before the
    // throughput: they fit the 80 columns the console may cut the line to.
    char gauc[24] = "";
    if (st.last_gauc != -1) std::snprintf(gauc, sizeof gauc, "gauc %.4f ", st.last_gauc);
    // --slice-auc: the weakest of the slices reported (one class only: no AUC, left out)
    char slice[40] = "";
    double weakest = 2;
    for (const auto& s : st.last_slices)
      if (s.auc == s.auc) weakest = std::min(weakest, s.auc);
    if (weakest <= 1) std::snprintf(slice, sizeof slice, "slice auc min %.4f ", weakest);
    std::snprintf(buf, sizeof buf,
                  "epoch %5.2f clock %6lld/%s loss %.4f auc %.4f %s%scal %.3f %7.0f samples/s%s "
                  "max staleness %lld %s",
                  epoch, static_cast<long long>(clock), total.c_str(), n ? loss / n : 0.0,
                  st.last_auc, gauc, slice, st.last_calibration, rate, rows,
                  static_cast<long long>(st.max_staleness), backends_text(st).c_str());
    return buf + copying_text(st);
  }
  char acc[32] = "test acc   -   ";
  if (st.last_accuracy >= 0)
    std::snprintf(acc, sizeof acc, "test acc %.4f", st.last_accuracy);
  // Single spaces: the figures that matter most (up to the test accuracy) fit 80 columns, where
  // the console cuts the line (actors/protocol/console.hpp).
  std::snprintf(buf, sizeof buf,
                "epoch %5.2f clock %6lld/%s %7.0f samples/s loss %.4f %s%s max staleness %lld %s",
                epoch, static_cast<long long>(clock), total.c_str(), rate,
                n ? loss / n : 0.0, acc, rows, static_cast<long long>(st.max_staleness),
                backends_text(st).c_str());
  return buf + copying_text(st);
}

void on_train_report(self_ptr self, const train_report& r) {
  if (!count_report(self, r)) return;
  grant_clocks(self);
  maybe_evaluate(self);
  check_kills(self);
  maybe_checkpoint(self);
  maybe_export(self);
  maybe_copy_ahead(self);
  auto& st = self->state;
  if (st.progress->due(false)) st.progress->show(progress_text(st), false);
}

void record_train_report(self_ptr self, const train_report& r) {
  count_report(self, r);
}

void on_worker_done(self_ptr self, int32_t worker) {
  if (!from_current_worker(self, worker)) return;
  self->state.done[worker] = true;
  release_finished_workers(self);
  check_all_done(self);
}

void check_all_done(self_ptr self) {
  auto& st = self->state;
  if (st.phase != run_phase::training || !st.replacing.empty() || !st.parked.empty()
      || !st.failing_over.empty())
    return;
  // A lost worker whose process is expected back still has clocks to train (on_worker_due
  // gives up on it after --connect-timeout).
  for (const auto& [role, since] : st.awaiting_rejoin)
    if (role.kind == role_kind::worker) return;
  for (std::size_t w = 0; w < st.live.size(); ++w)
    if (st.live[w] && !st.done[w]) return;
  finish_training(self);
}

void await_worker_process(self_ptr self, int32_t w, chief_state::time_point since) {
  auto& st = self->state;
  st.awaiting_rejoin[worker_role(w)] = since;
  self->delayed_send(self, st.cfg.remote->join_timeout, worker_due_atom::value, w,
                     static_cast<int64_t>(since.time_since_epoch().count()));
}

void on_worker_due(self_ptr self, int32_t w, int64_t since) {
  auto& st = self->state;
  auto i = st.awaiting_rejoin.find(worker_role(w));
  if (i == st.awaiting_rejoin.end() || i->second.time_since_epoch().count() != since) return;
  st.awaiting_rejoin.erase(i);
  log_line(log_level::warn, "chief", worker_role(w).text() + " did not come back within "
                                       "--connect-timeout; the run goes on without it");
  record_skipped(self, w, "its process did not come back within --connect-timeout");
  check_all_done(self);
}

} // namespace actorps::chief_detail
