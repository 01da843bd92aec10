// The chief's actor: its state at spawn, and the first phase (phases.cpp has them all).
#include "actors/chief/state.hpp"

#include "actors/storage/checkpoint_io.hpp"
#include "actors/storage/checkpoint_store.hpp"

namespace actorps::chief_detail {

chief_actor::behavior_type chief(self_ptr self, chief_config cfg) {
  auto& st = self->state;
  st.metrics = cfg.metrics ? cfg.metrics : std::make_shared<metrics_file>("");
  st.progress = std::make_unique<progress_line>(cfg.progress);
  auto workers = static_cast<std::size_t>(cfg.spec.workers);
  st.clocks.assign(workers, 0);
  st.live.assign(workers, true);
  st.done.assign(workers, false);
  st.last_loss.assign(workers, 0.0);
  st.shards.resize(workers > 0 ? static_cast<std::size_t>(cfg.spec.shards) : 0);
  st.workers.resize(workers);
  if (cfg.remote) st.worker_nodes.resize(workers);
  st.incarnation.assign(workers, 0);
  st.replacements.assign(workers, 0);
  st.released.assign(workers, false);
  st.kill_done.assign(cfg.kills.size(), false);
  if (!cfg.checkpoints.dir.empty())
    st.io = spawn_checkpoint_io(self->system(), {cfg.checkpoints.run_id, cfg.checkpoints.fail_at,
                                                 cfg.bounds.max_parameter, cfg.checkpoints.key});
  if (const auto& resume = cfg.checkpoints.resume) {
    // st.samples stays 0: samples/s is this run's rows over this run's time; the summary's
    // sample count, which includes the checkpoint's, follows from the clocks
    st.start_clock = st.resumed_from = resume->clock;
    st.last_checkpoint = resume->clock;
    st.clocks.assign(workers, resume->clock);
    // a planned resize at or before that clock was made before the checkpoint was taken: the
    // planner starts the run at the size it left (plan_checkpoints)
    while (st.resizes_done < cfg.resizes.size()
           && cfg.resizes[st.resizes_done].at_clock <= resume->clock)
      ++st.resizes_done;
  }
  auto every = cfg.checkpoints.every;
  st.next_checkpoint = every > 0 ? (st.start_clock / every + 1) * every : cfg.steps;
  st.cfg = std::move(cfg);
  // every worker at its data's start, or where the checkpoint it resumes says
  auto offsets = st.cfg.checkpoints.resume ? data_offsets_in(st, *st.cfg.checkpoints.resume)
                                           : std::vector<int64_t>(workers, 0);
  st.data_spans.resize(workers);
  constexpr auto no_end = std::numeric_limits<int64_t>::max();
  for (std::size_t w = 0; w < workers; ++w)
    st.data_spans[w] = {chief_state::data_span{st.start_clock, no_end, offsets[w]}};
  if (!st.cfg.checkpoints.resume_plans.empty()) {  // positions count in the plans from here
    st.plans = st.cfg.checkpoints.resume_plans;
    st.batches_before_plans = st.cfg.checkpoints.resume_batches;
    st.plans_from = st.start_clock;
    st.data_spans.assign(workers, {chief_state::data_span{st.start_clock, no_end, st.start_clock}});
  }
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  return phase_behavior(self, run_phase::waiting);
}

} // namespace actorps::chief_detail

namespace actorps {

chief_actor spawn_chief(caf::actor_system& sys, chief_config cfg) {
  place_buckets(cfg.spec);  // the chief creates the run: every other role reads its placement
  return sys.spawn(chief_detail::chief, std::move(cfg));
}

} // namespace actorps
