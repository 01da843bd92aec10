// actorps scale: a distributed run asked, while it trains, to go on with another number of
// shards, of workers, or both. The request is checked (the phase, the numbers, no other change
// under way, a spare ps task for each new shard and a spare worker task for each new worker:
// spare_tasks.cpp, spare_workers.cpp), then becomes the next resize (resize.cpp) at a clock a
// few clocks past the slowest live worker's (the shards' clock), which the shards hold their
// state for; the resize is the one a run in one process makes, with the spares taken in
// instead of spawned roles. The request is answered once training has resumed on the new
// shards, or refused with the reason: now, or when the run ends first.
//
// The workers report their clocks in batches (every 20 ms or more across processes), so a
// worker may be past the clock asked for: each is told to pause there (worker_config::pause_at,
// by message: worker_pause.cpp), and one that has begun that clock says the first it has not,
// which all of them pause at then. So the shards' state at the clock holds exactly the pushes
// before it in every mode, as in one process. Should the shards still be past it (a worker
// replaced meanwhile, say), the change is asked again twice as far ahead.
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"
#include "actors/protocol/model_spec.hpp"

namespace actorps::chief_detail {

namespace {

constexpr int64_t first_margin = 4;  // clocks past the shards' (the slowest live worker's)

/// "3 shards", "3 workers" or "3 shards and 2 workers": the sizes asked for that differ from
/// the run's now (the shards if none does); with `from`, "2 to 3 shards" and so on.
std::string size_text(const chief_state& st, int32_t shards, int32_t workers, bool from = false) {
  const auto shards_now = static_cast<int32_t>(st.shards.size());
  const auto workers_now = st.cfg.spec.workers;
  auto one = [&](int32_t now, int32_t to, const char* what) {
    return (from ? std::to_string(now) + " to " : std::string()) + std::to_string(to) + what;
  };
  std::string out;
  if (shards != shards_now || workers == workers_now) out = one(shards_now, shards, " shards");
  if (workers != workers_now)
    out += (out.empty() ? "" : " and ") + one(workers_now, workers, " workers");
  return out;
}

caf::error refusal(const std::string& what, const std::string& why) {
  log_line(log_level::warn, "chief", "scale to " + what + " refused: " + why);
  return caf::make_error(caf::sec::runtime_error, why);
}

/// Why the run cannot take a scale request in its phase ("" while training).
std::string phase_refusal(run_phase phase) {
  switch (phase) {
    case run_phase::training: return "";
    case run_phase::waiting:
    case run_phase::placing: return "the run has not begun training yet";
    case run_phase::rolling_back: return "the run is going back to a checkpoint";
    case run_phase::resizing: return "a resize is under way already";
    case run_phase::finishing: return "training is over";
    case run_phase::stopping: break;
  }
  return "this run is over";
}

/// The spare tasks a change from the run's size to `shards` and `workers` lacks, worded; "" if
/// none.
std::string missing_tasks(const chief_state& st, int32_t shards, int32_t workers) {
  auto missing = missing_spares(st, static_cast<int32_t>(st.shards.size()), shards);
  if (missing.empty())
    missing = missing_spare_workers(st, static_cast<int32_t>(st.worker_nodes.size()), workers);
  return missing;
}

} // namespace

std::string scale_refusal(const chief_state& st, int32_t shards, int32_t workers) {
  const auto now = static_cast<int32_t>(st.shards.size());
  if (!st.cfg.remote) return "this chief runs every role in one process (use --resize)";
  if (shards < 1 || shards > max_shards)
    return "the number of shards is 1 to " + std::to_string(max_shards);
  if (workers < 1 || workers > max_workers)
    return "the number of workers is 1 to " + std::to_string(max_workers);
  if (const auto buckets = st.cfg.spec.bucket_shards.size();
      buckets > 0 && static_cast<std::size_t>(shards) > buckets)
    return "more shards than the " + std::to_string(buckets) + " buckets of the sparse keys";
  if (st.scale_answer.pending())
    return "a resize to " + size_text(st, st.scale_to, st.scale_workers_to)
           + " is under way already";
  if (auto why = phase_refusal(st.phase); !why.empty()) return why;
  if (st.resize_asked || st.resizes_done < st.cfg.resizes.size())
    return "a resize is under way already";
  if (shards == now && workers == st.cfg.spec.workers) return "";  // nothing to change
  // A change of shards counts ps tasks by shard (spare_tasks.cpp: task s serves shard s), which
  // a fail-over has made untrue: a shrink would stop a task beyond the new size that serves a
  // shard that stays.
  if (shards != now)
    for (int32_t s = 0; s < static_cast<int32_t>(st.primary_host.size()); ++s)
      if (st.primary_host[s] >= 0 && st.primary_host[s] != s)
        return "shard " + std::to_string(s) + " is served by ps:"
               + std::to_string(st.primary_host[s])
               + " since a fail-over (the number of workers may change)";
  if (st.cfg.source.follow) return "not while following a stream (--follow)";
  if (!st.failing_over.empty()) return "a fail-over is under way";
  if (workers != st.cfg.spec.workers && !st.cfg.checkpoints.dir.empty()
      && !st.cfg.checkpoints.files.empty())
    return "a change of workers is not made with --checkpoint-dir over a directory read as a "
           "stream (a checkpoint holds each worker's own file position)";
  return missing_tasks(st, shards, workers);
}

std::string schedule_scale(self_ptr self, int32_t shards, int32_t workers) {
  auto& st = self->state;
  const auto now = static_cast<int32_t>(st.shards.size());
  // Far enough ahead for the rows it moves to be copied first, where they are (copy_ahead.cpp);
  // too near the run's end for that, they move at the clock.
  const auto lead = copy_ahead_lead(self, shards);
  const auto margin =
    lead > first_margin && st.global_clock() + lead < st.cfg.steps ? lead : first_margin;
  const auto clock = st.global_clock() + margin;
  if (clock >= st.cfg.steps)
    return "the run ends at clock " + std::to_string(st.cfg.steps)
           + ", too soon for a change (the workers are at clock "
           + std::to_string(st.global_clock()) + ")";
  log_line("chief", "scale from " + size_text(st, shards, workers, true)
                      + " asked: at clock " + std::to_string(clock));
  st.cfg.resizes.push_back({shards == now ? 0 : shards, clock,
                            workers == st.cfg.spec.workers ? 0 : workers});
  st.scale_to = shards;
  st.scale_workers_to = workers;
  st.scale_margin = margin;
  arm_next_resize(self);
  return "";
}

caf::result<int32_t, int32_t> on_scale_request(self_ptr self, int32_t shards, int32_t workers) {
  auto& st = self->state;
  if (shards == 0) shards = static_cast<int32_t>(st.shards.size());  // 0: as many as now
  if (workers == 0) workers = st.cfg.spec.workers;
  const auto what = size_text(st, shards, workers);
  if (auto why = scale_refusal(st, shards, workers); !why.empty()) return refusal(what, why);
  if (shards == static_cast<int32_t>(st.shards.size()) && workers == st.cfg.spec.workers) {
    log_line("chief", "scale to " + what + ": the run has as many");
    return caf::result<int32_t, int32_t>(shards, workers);
  }
  if (auto why = schedule_scale(self, shards, workers); !why.empty()) return refusal(what, why);
  st.scale_answer = self->make_response_promise<int32_t, int32_t>();
  return st.scale_answer;
}

bool resize_can_begin(self_ptr self, int32_t to, int32_t workers) {
  auto& st = self->state;
  if (!st.cfg.remote) return true;
  auto missing = missing_tasks(st, to, workers);
  if (missing.empty()) return true;
  log_line(log_level::warn, "chief", "the resize to " + size_text(st, to, workers)
                                       + " does not begin: " + missing);
  refuse_scale_request(self, missing);
  return false;
}

void answer_scale_request(self_ptr self) {
  auto& st = self->state;
  if (!st.scale_answer.pending()) return;
  if (static_cast<int32_t>(st.shards.size()) == st.scale_to
      && st.cfg.spec.workers == st.scale_workers_to)
    st.scale_answer.deliver(st.scale_to, st.scale_workers_to);
  else
    refuse_scale_request(self, "the run has " + std::to_string(st.shards.size()) + " shards and "
                                 + std::to_string(st.cfg.spec.workers) + " workers");
}

bool ask_scale_later(self_ptr self) {
  auto& st = self->state;
  if (!st.scale_answer.pending() || st.resizes_done + 1 != st.cfg.resizes.size()) return false;
  auto& planned = st.cfg.resizes.back();
  st.scale_margin *= 2;
  const auto clock = st.global_clock() + st.scale_margin;
  if (clock >= st.cfg.steps) {
    refuse_scale_request(self, "the shards passed clock " + std::to_string(planned.at_clock)
                                 + " before the change, and the run ends at clock "
                                 + std::to_string(st.cfg.steps));
    return false;
  }
  log_line("chief", "the shards are past clock " + std::to_string(planned.at_clock)
                      + "; the change to " + size_text(st, st.scale_to, st.scale_workers_to)
                      + " is asked at clock " + std::to_string(clock));
  planned.at_clock = clock;
  return true;
}

void refuse_scale_request(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (!st.scale_answer.pending()) return;
  st.scale_answer.deliver(refusal(size_text(st, st.scale_to, st.scale_workers_to), why));
}

} // namespace actorps::chief_detail
