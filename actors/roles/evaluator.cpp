#include "actors/roles/evaluator.hpp"

#include "actors/protocol/fan_out.hpp"

#include "actors/protocol/log.hpp"
#include "actors/model/registry.hpp"
#include "kernels/denormals.hpp"

#include <caf/all.hpp>

#include <memory>

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

/// Evaluates the parameters of the snapshots (one per shard) taken for `clock`.
caf::expected<eval_report> evaluate_snapshots(self_ptr self, int64_t clock,
                                              const std::vector<wire_buffer>& snaps,
                                              caf::timestamp started) {
  auto& st = self->state;
  for (const auto& snap : snaps)
    if (auto msg = scatter_shard_parameters(snap, *st.layout, st.params.data()); !msg) {
      log_line("evaluator", "bad snapshot: " + describe(msg.error()));
      return msg.error();
    }
  auto metrics = st.model->evaluate(st.params.data());
  eval_report report;
  report.clock = clock;
  report.test_rows = metrics.rows;
  report.test_accuracy = metrics.accuracy;
  report.test_loss = metrics.loss;
  report.eval_seconds = std::chrono::duration<double>(caf::make_timestamp() - started).count();
  return report;
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
      // shared: the fan-out's callbacks are const, and delivering is not
      auto promise = std::make_shared<caf::typed_response_promise<eval_report>>(
        self->make_response_promise<eval_report>());
      auto started = caf::make_timestamp();
      ask_each<wire_buffer>(
        st.cfg.shards.size(),
        [&](std::size_t s) {
          return self->request(st.cfg.shards[s], st.cfg.request_timeout, snapshot_atom::value);
        },
        [=](std::vector<wire_buffer> snaps) {
          if (auto report = evaluate_snapshots(self, clock, snaps, started))
            promise->deliver(*report);
          else
            promise->deliver(report.error());
        },
        [=](caf::error& err) { promise->deliver(err); });
      return *promise;
    },
  };
}

} // namespace

evaluator_actor spawn_evaluator(caf::actor_system& sys, evaluator_config cfg) {
  return sys.spawn<caf::detached>(evaluator, std::move(cfg));
}

} // namespace actorps
