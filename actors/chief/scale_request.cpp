// actorps scale: a distributed run asked, while it trains, to go on with another number of
// shards. The request is checked (the phase, the number, no other change under way, a spare
// ps task for each new shard: spare_tasks.cpp), then becomes the next resize (resize.cpp) at a
// clock a few clocks past the slowest live worker's (the shards' clock), which the shards hold
// their state for; the resize is the one a run in one process makes, with the spares' shards taken in
// instead of spawned ones. The request is answered once training has resumed on the new
// shards, or refused with the reason: now, or when the run ends first.
//
// The workers report their clocks in batches (every 20 ms or more across processes), so the
// shards may be past the clock asked for; the change is then asked again twice as far ahead.
//
// The workers run in other processes and do not pause at the clock of the change, as they do
// in one process (worker_config::pause_at). In sync mode the state at that clock is exact all
// the same (a later clock's pushes wait for the round); in ssp and async it may hold pushes a
// faster worker made past it, which that worker trains again from the clock, as after a
// rollback to a checkpoint.
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"
#include "actors/protocol/model_spec.hpp"

namespace actorps::chief_detail {

namespace {

constexpr int64_t first_margin = 4;  // clocks past the shards' (the slowest live worker's)

caf::error refusal(int32_t shards, const std::string& why) {
  log_line(log_level::warn, "chief",
           "scale to " + std::to_string(shards) + " shards refused: " + why);
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

} // namespace

caf::result<int32_t> on_scale_request(self_ptr self, int32_t shards) {
  auto& st = self->state;
  const auto now = static_cast<int32_t>(st.shards.size());
  if (!st.cfg.remote)
    return refusal(shards, "this chief runs every role in one process (use --resize)");
  if (shards < 1 || shards > max_shards)
    return refusal(shards, "the number of shards is 1 to " + std::to_string(max_shards));
  if (const auto buckets = st.cfg.spec.bucket_shards.size();
      buckets > 0 && static_cast<std::size_t>(shards) > buckets)
    return refusal(shards, "more shards than the " + std::to_string(buckets)
                             + " buckets of the sparse keys");
  if (st.scale_answer.pending())
    return refusal(shards, "a resize to " + std::to_string(st.scale_to)
                             + " shards is under way already");
  if (auto why = phase_refusal(st.phase); !why.empty()) return refusal(shards, why);
  if (st.resize_asked || st.resizes_done < st.cfg.resizes.size())
    return refusal(shards, "a resize is under way already");
  if (shards == now) {
    log_line("chief", "scale to " + std::to_string(shards) + " shards: the run has as many");
    return shards;
  }
  if (st.cfg.replicas > 0) return refusal(shards, "not with standbys (--replicas) yet");
  if (st.cfg.source.follow) return refusal(shards, "not while following a stream (--follow)");
  if (!st.failing_over.empty()) return refusal(shards, "a fail-over is under way");
  if (auto missing = missing_spares(st, now, shards); !missing.empty())
    return refusal(shards, missing);
  const auto clock = st.global_clock() + first_margin;
  if (clock >= st.cfg.steps)
    return refusal(shards, "the run ends at clock " + std::to_string(st.cfg.steps)
                             + ", too soon for a change (the workers are at clock "
                             + std::to_string(st.global_clock()) + ")");
  log_line("chief", "scale from " + std::to_string(now) + " to " + std::to_string(shards)
                      + " shards asked: at clock " + std::to_string(clock));
  st.cfg.resizes.push_back({shards, clock});
  st.scale_to = shards;
  st.scale_margin = first_margin;
  st.scale_answer = self->make_response_promise<int32_t>();
  arm_next_resize(self);
  return st.scale_answer;
}

bool resize_can_begin(self_ptr self, int32_t to) {
  auto& st = self->state;
  if (!st.cfg.remote) return true;
  auto missing = missing_spares(st, static_cast<int32_t>(st.shards.size()), to);
  if (missing.empty()) return true;
  log_line(log_level::warn, "chief", "the resize to " + std::to_string(to)
                                       + " shards does not begin: " + missing);
  refuse_scale_request(self, missing);
  return false;
}

void answer_scale_request(self_ptr self) {
  auto& st = self->state;
  if (!st.scale_answer.pending()) return;
  if (static_cast<int32_t>(st.shards.size()) == st.scale_to)
    st.scale_answer.deliver(st.scale_to);
  else
    refuse_scale_request(self, "the run has " + std::to_string(st.shards.size()) + " shards");
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
                      + "; the change to " + std::to_string(planned.shards)
                      + " shards is asked at clock " + std::to_string(clock));
  planned.at_clock = clock;
  return true;
}

void refuse_scale_request(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (!st.scale_answer.pending()) return;
  st.scale_answer.deliver(refusal(st.scale_to, why));
}

} // namespace actorps::chief_detail
