#include "actors/model/criteo_model.hpp"

#include <stdexcept>

namespace actorps {

ctr_batches ctr_training_batches(const trainer_context& ctx) {
  const auto& src = ctx.source;
  if (src.what != data_source::kind::criteo && src.what != data_source::kind::logs)
    throw std::invalid_argument(needs_criteo);
  ctr_batches batches(src, ctx.worker, ctx.workers, ctx.batch);
  if (batches.schema())
    if (auto why = criteo_layout_refusal(*batches.schema()); !why.empty())
      throw std::invalid_argument(why);
  return batches;
}

std::string criteo_layout_refusal(const feature_schema& schema) {
  if (schema.dense_width == criteo_dense_fields && schema.fields == criteo_categorical_fields
      && !schema.multi_hot && schema.weight < 0)
    return "";
  return schema.path + " gives " + std::to_string(schema.dense_width) + " dense values and "
         + std::to_string(schema.fields) + " key fields a row"
         + (schema.multi_hot ? ", multi-hot among them" : "")
         + (schema.weight >= 0 ? ", and weights" : "")
         + "; the model reads Criteo's layout: 13 dense values and 26 single-valued key fields, "
           "no weights";
}

const criteo_batch& criteo_test_split(const std::shared_ptr<const dataset>& test) {
  if (!test || test->criteo.rows() == 0)
    throw std::invalid_argument(std::string(needs_criteo) + "; the test split has no such rows");
  return test->criteo;
}

void name_criteo_keys(const char* model, const criteo_batch& b,
                      std::vector<std::vector<uint64_t>>& per_table) {
  if (per_table.size() != 1)
    throw std::logic_error(std::string(model) + ": keys() for " + std::to_string(per_table.size())
                           + " tables, the model has 1");
  per_table[0].assign(b.keys.begin(), b.keys.end());
}

std::unique_ptr<backend> ctr_backend(const trainer_context& ctx) {
  std::string why;
  auto be = make_backend(ctx.backend, ctx.device, &why);
  if (!be || (ctx.backend == backend_kind::cuda && be->name() != "cuda"))
    throw std::runtime_error(why.empty() ? "no backend" : why);
  return be;
}

training_defaults ctr_recipe() {
  training_defaults d;
  d.optimizer = optimizer_kind::adam;
  d.lr = 0.003f;
  d.batch = 256;
  d.epochs = 1;
  d.table_lr = 0.1f;
  d.admit_after = 20;
  return d;
}

} // namespace actorps
