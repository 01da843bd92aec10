// What the CTR plug-ins (lr, dlrm) share: they train on a Criteo log that each worker streams,
// and score the test split, which the runtime loads whole, by exact AUC and log loss.
#pragma once

#include "actors/data/dataset.hpp"
#include "actors/model/plugin.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

/// What a CTR model says when given other data.
inline constexpr const char* needs_criteo =
  "it trains on --dataset criteo:PATH (with --test PATH): Criteo's label, I1-I13, C1-C26 lines";

/// The file a CTR trainer streams: ctx.source's training file; throws std::invalid_argument
/// (needs_criteo) for another kind of data.
const std::string& criteo_training_file(const trainer_context& ctx);

/// The Criteo test split of `test`; throws std::invalid_argument (needs_criteo) when it holds
/// none.
const criteo_batch& criteo_test_split(const std::shared_ptr<const dataset>& test);

/// Throws std::logic_error unless the runtime handed exactly one table of rows of `dim` floats
/// with `uses` keys named (and gradients when `grads`).
void check_one_table(const char* model, const std::vector<table_rows>& tables, uint32_t dim,
                     std::size_t uses, bool grads);

/// Test metrics of a binary model from its logits z (n) against 0/1 labels: exact ROC AUC, mean
/// log loss (computed from the logits, exact where a probability would round to 0 or 1) and
/// accuracy at p ≥ 0.5.
eval_metrics binary_metrics_from_logits(const float* z, const float* labels, std::size_t n);

} // namespace actorps
