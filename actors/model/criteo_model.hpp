// What the CTR plug-ins (lr, dlrm, wdl, deepfm) share: they train on a Criteo log that each worker streams,
// and score the test split, which the runtime loads whole, by exact AUC and log loss.
#pragma once

#include "actors/data/ctr_batches.hpp"
#include "actors/data/dataset.hpp"
#include "actors/model/plugin.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

/// What a CTR model says when given other data.
inline constexpr const char* needs_criteo =
  "it trains on --dataset criteo:PATH (with --test PATH): Criteo's label, I1-I13, C1-C26 lines, "
  "or on tsv:PATH or csv:PATH with a --schema of that layout";

/// The batches a CTR trainer streams: its part of ctx.source's training file. Throws
/// std::invalid_argument (needs_criteo) for another kind of data or a schema whose layout is
/// not Criteo's (criteo_layout_refusal), schema_error for a bad schema.
ctr_batches ctr_training_batches(const trainer_context& ctx);

/// Why a log of `schema` cannot train a model that reads Criteo's layout ("" if it can): such
/// a model wants 13 dense values and 26 single-valued key fields a row, no weights.
std::string criteo_layout_refusal(const feature_schema& schema);

/// The Criteo test split of `test`; throws std::invalid_argument (needs_criteo) when it holds
/// none.
const criteo_batch& criteo_test_split(const std::shared_ptr<const dataset>& test);

/// trainer::keys and evaluation::keys of a CTR model with one table: every key of `b`, sample
/// by sample, field by field (so table_rows::inverse[r·26 + f] is sample r's row of field f).
/// Throws std::logic_error unless per_table holds one table.
void name_criteo_keys(const char* model, const criteo_batch& b,
                      std::vector<std::vector<uint64_t>>& per_table);

/// The backend a CTR trainer computes on (ctx.backend, ctx.device); throws std::runtime_error
/// saying why when there is none, or when CUDA was asked for and is not to be had.
std::unique_ptr<backend> ctr_backend(const trainer_context& ctx);

/// The CTR recipe of README's figures: one pass in batches of 256, Adam at 0.003 on the dense
/// tensors, the tables' Adagrad at 0.1, a row only for a value's 20th push.
training_defaults ctr_recipe();

/// A plug-in that trains on the Criteo layout: refuses other data with needs_criteo.
class criteo_plugin : public model_plugin {
public:
  std::string check_data(int cols, int classes) const override {
    return cols == 0 && classes == 2 ? "" : needs_criteo;
  }
  std::string check_source(data_source::kind what) const override {
    return what == data_source::kind::criteo || what == data_source::kind::logs ? ""
                                                                                 : needs_criteo;
  }
  std::string check_schema(const feature_schema& schema) const override {
    return criteo_layout_refusal(schema);
  }
};

} // namespace actorps
