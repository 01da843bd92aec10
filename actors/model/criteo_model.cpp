#include "actors/model/criteo_model.hpp"

#include <stdexcept>

namespace actorps {

const std::string& criteo_training_file(const trainer_context& ctx) {
  if (ctx.source.what != data_source::kind::criteo) throw std::invalid_argument(needs_criteo);
  return ctx.source.train_path;
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
