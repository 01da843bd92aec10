// What the CTR plug-ins (lr, dlrm, wdl, deepfm) share: they train on a CTR log (Criteo's, or one
// a schema describes) that each worker streams, and score the test split, which the runtime
// loads whole, by exact AUC and log loss.
#pragma once

#include "actors/data/ctr_batches.hpp"
#include "actors/ps/dataset.hpp"
#include "actors/ps/model_plugin.hpp"
#include "kernels/ctr_bags.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

/// What a CTR model says when given other data.
inline constexpr const char* needs_criteo =
  "it trains on --dataset criteo:PATH (with --test PATH): Criteo's label, I1-I13, C1-C26 lines, "
  "or on tsv:PATH or csv:PATH with a --schema of that layout";

/// What a CTR model reads a row as: `dense` dense values and `fields` key fields, each a key
/// or a bag of keys (multi-hot, pooled per sample). Criteo's layout is 13 and 26; a log's
/// comes from its schema (feature_schema::dense_width and fields).
struct ctr_layout {
  int dense = criteo_dense_fields;
  int fields = criteo_categorical_fields;

  bool operator==(const ctr_layout& o) const { return dense == o.dense && fields == o.fields; }
  bool operator!=(const ctr_layout& o) const { return !(*this == o); }
};

/// The layout of the logs `schema` describes.
ctr_layout layout_of(const feature_schema& schema);

/// ":DENSExFIELDS", the last part of a CTR model's name for a layout other than Criteo's ("" for
/// Criteo's), so that every process of a run, and a checkpoint or export, builds the same
/// shapes: e.g. "dlrm:16:64-32:128-64:5x4".
std::string layout_suffix(const ctr_layout& layout);

/// Takes a last part "DENSExFIELDS" (both positive) off a model's arguments into `layout`;
/// `args` keeps the rest. False, with both untouched, when there is none.
bool take_layout(std::string& args, ctr_layout& layout);

/// The batches a CTR trainer streams: its part of ctx.source's training file. Throws
/// std::invalid_argument (needs_criteo) for another kind of data or a layout other than the
/// model's `layout`, schema_error for a bad schema.
ctr_batches ctr_training_batches(const trainer_context& ctx, const ctr_layout& layout = {});

/// Why a log of `schema` cannot train a model of `layout` ("" if it can).
std::string layout_refusal(const feature_schema& schema, const ctr_layout& layout);

/// The CTR test split of `test` (Criteo's or a log's rows); throws std::invalid_argument
/// (needs_criteo) when it holds none, or rows of another layout than `layout`.
const criteo_batch& criteo_test_split(const std::shared_ptr<const dataset>& test,
                                      const ctr_layout& layout = {});

/// A batch's bags as the kernels take them (kernels/ctr_bags.hpp): null when every field of it
/// holds one key (no offsets), else its offsets and each bag's pooling scale.
class batch_bags {
public:
  /// Valid until the next call or until `b` changes.
  const ctr_bags* of(const criteo_batch& b);

private:
  std::vector<float> scale_;
  ctr_bags bags_;
};

/// The batch's sample weights, or null when it has none (every row weighs 1).
inline const float* sample_weights(const criteo_batch& b) {
  return b.weights.empty() ? nullptr : b.weights.data();
}

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

/// A plug-in that trains on CTR rows of one layout: Criteo's (criteo:PATH, or a log whose
/// schema gives that layout) or a log's; refuses other data with needs_criteo.
class criteo_plugin : public model_plugin {
public:
  explicit criteo_plugin(ctr_layout layout = {}) : layout_(layout) {}

  std::string check_data(int cols, int classes) const override {
    return cols == 0 && classes == 2 ? "" : needs_criteo;
  }
  std::string check_source(data_source::kind what) const override;
  std::string check_schema(const feature_schema& schema) const override {
    return layout_refusal(schema, layout_);
  }
  std::unique_ptr<model_plugin> for_schema(const feature_schema& schema) const override;

  const ctr_layout& layout() const { return layout_; }

protected:
  /// The same model reading rows of `layout`; throws model_error when it cannot.
  virtual std::unique_ptr<model_plugin> with_layout(const ctr_layout& layout) const = 0;

private:
  ctr_layout layout_;
};

} // namespace actorps
