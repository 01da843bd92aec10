#include "actors/ps/model_plugin.hpp"

#include "kernels/binary_metrics.hpp"
#include "kernels/sparse_logistic.hpp"

#include <stdexcept>

namespace actorps {

step_loss trainer::step(int64_t, const float*, float*) {
  throw std::logic_error("this trainer trains sparse tables: call step() with them");
}

void trainer::keys(int64_t, std::vector<std::vector<uint64_t>>&) {}

step_loss trainer::step(int64_t clock, const float* params, float* grad,
                        std::vector<table_rows>&) {
  return step(clock, params, grad);
}

eval_metrics evaluation::evaluate(const float*) {
  throw std::logic_error("this evaluation reads sparse tables: call evaluate() with them");
}

void evaluation::keys(std::vector<std::vector<uint64_t>>&) {}

eval_metrics evaluation::evaluate(const float* params, const std::vector<table_rows>&) {
  return evaluate(params);
}

void check_one_table(const char* model, const std::vector<table_rows>& tables, uint32_t dim,
                     std::size_t uses, bool grads) {
  const std::string who(model);
  if (tables.size() != 1)
    throw std::logic_error(who + ": expected 1 table, got " + std::to_string(tables.size()));
  const auto& t = tables[0];
  if (t.dim != dim)
    throw std::logic_error(who + ": expected rows of dim " + std::to_string(dim) + ", got "
                           + std::to_string(t.dim));
  if (t.inverse.size() != uses || t.values.size() != t.keys.size() * dim
      || (grads && t.grads.size() != t.keys.size() * dim))
    throw std::logic_error(who + ": the table's rows do not match the keys asked for ("
                           + std::to_string(t.inverse.size()) + " uses, " + std::to_string(uses)
                           + " asked)");
}

eval_metrics binary_metrics_from_logits(const float* z, const float* labels, std::size_t n,
                                        const dataset::key_groups& groups) {
  eval_metrics out;
  out.rows = static_cast<int64_t>(n);
  out.calibration = calibration_from_logits(z, labels, n);
  for (const auto* cut : {&groups.gauc, &groups.slices})
    if (!cut->empty() && cut->size() != n)
      throw std::logic_error("binary metrics: " + std::to_string(cut->size()) + " groups for "
                             + std::to_string(n) + " rows");
  if (!groups.gauc.empty()) out.gauc = group_auc(z, labels, groups.gauc.data(), n);
  if (!groups.slices.empty())
    out.slices = top_slice_aucs(z, labels, groups.slices.data(), n, slice_auc_top,
                                out.slice_rest_rows);
  // Logits rather than probabilities: only their order counts, and they keep it where σ
  // would round two confident rows to the same float.
  out.auc = roc_auc(z, labels, n);
  out.loss = mean_logloss_from_logits(z, labels, n);
  int64_t right = 0;
  for (std::size_t r = 0; r < n; ++r) right += (stable_sigmoid(z[r]) >= 0.5) == (labels[r] == 1.0f);
  out.accuracy = n ? double(right) / double(n) : 0;
  return out;
}

std::string model_plugin::check_source(data_source::kind what) const {
  if (!streamed(what)) return "";
  return "it trains on rows handed over in memory (fashion-mnist, synthetic, csv), not on a "
         "file each worker streams (libsvm, criteo, tsv/csv with --schema)";
}

} // namespace actorps
