#include "actors/roles/evaluator.hpp"

#include "actors/protocol/fan_out.hpp"
#include "actors/roles/authorisation.hpp"
#include "actors/roles/batch_tables.hpp"

#include "actors/protocol/log.hpp"
#include "actors/ps/model_registry.hpp"
#include "kernels/denormals.hpp"

#include <caf/all.hpp>

#include <memory>

namespace actorps {

namespace {

struct evaluator_state {
  static inline const char* name = "evaluator";

  evaluator_config cfg;
  int64_t refused = 0;  // requests refused as not authorised (in its reports)
  std::unique_ptr<block_layout> layout;
  std::unique_ptr<evaluation> model;  // the model plug-in's evaluation hook
  std::vector<float> params;
  batch_tables rows;  // sparse models: the rows of every key the test split reads
};

using self_ptr = evaluator_actor::stateful_pointer<evaluator_state>;

/// Evaluates the parameters of the snapshots (one per shard) taken for `clock`.
caf::expected<eval_report> evaluate_snapshots(self_ptr self, int64_t clock,
                                              const std::vector<wire_buffer>& snaps,
                                              caf::timestamp started) {
  auto& st = self->state;
  for (const auto& snap : snaps) {
    auto msg = scatter_shard_parameters(snap, *st.layout, st.params.data());
    auto err = msg ? st.rows.take_rows(msg->shard, msg->sparse) : msg.error();
    if (err) {
      log_line("evaluator", "bad snapshot: " + describe(err));
      return err;
    }
  }
  auto metrics = st.model->evaluate(st.params.data(), st.rows.rows());
  eval_report report;
  report.clock = clock;
  report.test_rows = metrics.rows;
  report.test_accuracy = metrics.accuracy;
  report.test_loss = metrics.loss;
  report.test_auc = metrics.auc;
  report.test_gauc = metrics.gauc;
  report.test_calibration = metrics.calibration;
  for (const auto& slice : metrics.slices)
    report.test_slices.push_back({slice.key, slice.rows, slice.positives, slice.auc});
  report.test_slice_rest_rows = metrics.slice_rest_rows;
  report.refused = st.refused;
  report.eval_seconds = std::chrono::duration<double>(caf::make_timestamp() - started).count();
  return report;
}

evaluator_actor::behavior_type evaluator(self_ptr self, evaluator_config cfg) {
  self->state.cfg = std::move(cfg);
  return {
    [=](eval_atom, int64_t clock) -> caf::result<eval_report> {
      if (auto err = note_refusal("evaluator", authorise_chief(current_role(self), "eval"))) {
        ++self->state.refused;
        return err;
      }
      auto& st = self->state;
      if (!st.model) {
        flush_denormals_to_zero();  // this (detached) thread runs the kernels
        st.layout = std::make_unique<block_layout>(st.cfg.spec);
        try {
          st.model = make_model(st.cfg.spec.model.name)->make_evaluation(st.cfg.test);
          st.rows = batch_tables(st.cfg.spec);
          std::vector<std::vector<uint64_t>> keys(st.cfg.spec.model.sparse_tables.size());
          st.model->keys(keys);  // asked once: the test split does not change
          st.rows.prepare(keys);
        } catch (const std::exception& e) {
          st.model.reset();
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
          if (st.rows.empty())
            return self->request(st.cfg.shards[s], st.cfg.request_timeout, snapshot_atom::value);
          auto shard = static_cast<int32_t>(s);
          return self->request(st.cfg.shards[s], st.cfg.request_timeout, snapshot_atom::value,
                               encode_pull(-1, clock, shard, st.rows.keys_for(shard)));
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
