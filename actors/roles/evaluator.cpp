#include "actors/roles/evaluator.hpp"

#include "actors/protocol/log.hpp"
#include "actors/model/registry.hpp"
#include "kernels/denormals.hpp"

#include <caf/all.hpp>

namespace actorps {

namespace {

struct evaluator_state {
  static inline const char* name = "evaluator";

  evaluator_config cfg;
  std::unique_ptr<block_layout> layout;
  std::unique_ptr<evaluation> model;  // the model plug-in's evaluation hook
  std::vector<float> params;
};

using self_ptr = evaluator_actor::stateful_pointer<evaluator_state>;

struct pending_eval {
  int64_t clock;
  std::size_t awaiting;
  bool failed = false;
  caf::timestamp started;
  caf::typed_response_promise<eval_report> promise;
};

void finish(self_ptr self, pending_eval& job) {
  auto& st = self->state;
  auto metrics = st.model->evaluate(st.params.data());
  eval_report report;
  report.clock = job.clock;
  report.test_rows = metrics.rows;
  report.test_accuracy = metrics.accuracy;
  report.test_loss = metrics.loss;
  report.eval_seconds =
    std::chrono::duration<double>(caf::make_timestamp() - job.started).count();
  job.promise.deliver(report);
}

evaluator_actor::behavior_type evaluator(self_ptr self, evaluator_config cfg) {
  self->state.cfg = std::move(cfg);
  return {
    [=](eval_atom, int64_t clock) -> caf::result<eval_report> {
      auto& st = self->state;
      if (!st.model) {
        flush_denormals_to_zero();  // this (detached) thread runs the kernels
        st.layout = std::make_unique<block_layout>(st.cfg.spec);
        try {
          st.model = make_model(st.cfg.spec.model.name)->make_evaluation(st.cfg.test);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, std::string("evaluator: ") + e.what());
        }
        st.params.assign(st.layout->total_floats(), 0.0f);
      }
      auto job = std::make_shared<pending_eval>(pending_eval{
        clock, st.cfg.shards.size(), false, caf::make_timestamp(),
        self->make_response_promise<eval_report>()});
      for (auto& shard : st.cfg.shards)
        self->request(shard, st.cfg.request_timeout, snapshot_atom::value)
          .then(
            [=](const wire_buffer& snap) {
              if (job->failed) return;
              auto msg = scatter_shard_parameters(snap, *self->state.layout,
                                                  self->state.params.data());
              if (!msg) {
                job->failed = true;
                log_line("evaluator", "bad snapshot: " + describe(msg.error()));
                job->promise.deliver(msg.error());
                return;
              }
              if (--job->awaiting == 0) finish(self, *job);
            },
            [=](caf::error& err) {
              if (job->failed) return;
              job->failed = true;
              job->promise.deliver(err);
            });
      return job->promise;
    },
  };
}

} // namespace

evaluator_actor spawn_evaluator(caf::actor_system& sys, evaluator_config cfg) {
  return sys.spawn<caf::detached>(evaluator, std::move(cfg));
}

} // namespace actorps
