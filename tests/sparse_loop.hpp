// The runtime's part around a sparse model, in one process: a local sparse_table per table of
// the spec is the "server", the plug-in's trainer runs the clock contract against it (keys(c),
// step(c), keys(c + 1), step(c + 1), ...), and the dense tensors move by plain SGD. What a
// plug-in's test trains with before any shard or worker is involved.
#pragma once

#include "actors/ps/model_plugin.hpp"
#include "kernels/sparse/key_dedup.hpp"
#include "kernels/sparse/sparse_table.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace actorps::test {

/// What the runtime does with one table's named keys before a step: de-duplicates them into
/// `rows` and reads each distinct key's row from `table`; the gradients start at zero.
inline void pull_rows(const sparse_table& table, const std::vector<uint64_t>& named,
                      table_rows& rows) {
  rows.dim = table.config().dim;
  dedup_keys(named.data(), named.size(), rows.keys, rows.inverse);
  rows.values.resize(rows.keys.size() * rows.dim);
  table.read(rows.keys.data(), rows.keys.size(), rows.values.data());
  rows.grads.assign(rows.keys.size() * rows.dim, 0.0f);
}

class local_sparse_run {
public:
  /// Tables from `spec` (its optimizers may differ from the plug-in's own), dense tensors at
  /// their initial values; `dense_lr`: the dense tensors' SGD step.
  local_sparse_run(const model_spec& spec, float dense_lr, uint64_t seed = 1)
    : params_(initial_values(spec, seed)), dense_lr_(dense_lr) {
    for (std::size_t t = 0; t < spec.sparse_tables.size(); ++t)
      tables_.emplace_back(spec.sparse_tables[t].config, seed, static_cast<uint32_t>(t));
  }

  /// Clocks [from, to) of `worker`, one push each: every table's summed gradients applied with
  /// lr scale 1, the dense gradient by SGD. Returns the loss summed over the rows, and the rows.
  step_loss train(trainer& worker, int64_t from, int64_t to) {
    std::vector<std::vector<uint64_t>> named(tables_.size());
    std::vector<table_rows> rows(tables_.size());
    std::vector<float> grad(params_.size());
    step_loss total;
    for (auto clock = from; clock < to; ++clock) {
      for (auto& keys : named) keys.clear();
      worker.keys(clock, named);
      for (std::size_t t = 0; t < tables_.size(); ++t) pull_rows(tables_[t], named[t], rows[t]);
      auto loss = worker.step(clock, params_.data(), grad.data(), rows);
      total.loss_sum += loss.loss_sum;
      total.rows += loss.rows;
      for (std::size_t t = 0; t < tables_.size(); ++t)
        tables_[t].apply(rows[t].keys.data(), rows[t].keys.size(), rows[t].grads.data(), 1.0f);
      for (std::size_t i = 0; i < params_.size(); ++i) params_[i] -= dense_lr_ * grad[i];
    }
    return total;
  }

  /// The evaluation at the current parameters, with the rows of the keys it names.
  eval_metrics evaluate(evaluation& eval) {
    std::vector<std::vector<uint64_t>> named(tables_.size());
    eval.keys(named);
    std::vector<table_rows> rows(tables_.size());
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      pull_rows(tables_[t], named[t], rows[t]);
      rows[t].grads.clear();
    }
    return eval.evaluate(params_.data(), rows);
  }

  const std::vector<float>& params() const { return params_; }
  const sparse_table& table(std::size_t t) const { return tables_[t]; }

private:
  std::vector<float> params_;
  float dense_lr_;
  std::vector<sparse_table> tables_;
};

} // namespace actorps::test
