#include "actors/model/criteo_model.hpp"

#include "kernels/backend_factory.hpp"

#include <stdexcept>

namespace actorps {

ctr_layout layout_of(const feature_schema& schema) {
  return {schema.dense_width, schema.fields};
}

std::string layout_suffix(const ctr_layout& layout) {
  if (layout == ctr_layout{}) return "";
  return ":" + std::to_string(layout.dense) + "x" + std::to_string(layout.fields);
}

bool take_layout(std::string& args, ctr_layout& layout) {
  const auto colon = args.rfind(':');
  const std::string last = colon == std::string::npos ? args : args.substr(colon + 1);
  const auto x = last.find('x');
  if (x == std::string::npos || x == 0 || x + 1 == last.size() || x > 4 || last.size() - x > 5
      || last.find_first_not_of("0123456789x") != std::string::npos
      || last.find('x', x + 1) != std::string::npos)
    return false;
  const int dense = std::stoi(last.substr(0, x)), fields = std::stoi(last.substr(x + 1));
  if (dense < 1 || fields < 1) return false;
  layout = {dense, fields};
  args = colon == std::string::npos ? "" : args.substr(0, colon);
  return true;
}

ctr_batches ctr_training_batches(const trainer_context& ctx, const ctr_layout& layout) {
  const auto& src = ctx.source;
  if (src.what != data_source::kind::criteo && src.what != data_source::kind::logs)
    throw std::invalid_argument(needs_criteo);
  if (src.what == data_source::kind::criteo && layout != ctr_layout{})
    throw std::invalid_argument("the model reads " + std::to_string(layout.dense)
                                + " dense values and " + std::to_string(layout.fields)
                                + " key fields a row; criteo:PATH gives 13 and 26");
  ctr_batches batches(src, ctx.worker, ctx.workers, ctx.batch);
  if (batches.schema())
    if (auto why = layout_refusal(*batches.schema(), layout); !why.empty())
      throw std::invalid_argument(why);
  return batches;
}

std::string layout_refusal(const feature_schema& schema, const ctr_layout& layout) {
  if (schema.dense_width < 1 || schema.fields < 1)
    return schema.path + " gives " + std::to_string(schema.dense_width) + " dense values and "
           + std::to_string(schema.fields) + " key fields a row; a CTR model needs one of each "
           + "at least (a numeric column, and a categorical or multi-hot one)";
  if (layout_of(schema) == layout) return "";
  return schema.path + " gives " + std::to_string(schema.dense_width) + " dense values and "
         + std::to_string(schema.fields) + " key fields a row; the model reads "
         + std::to_string(layout.dense) + " and " + std::to_string(layout.fields);
}

const criteo_batch& criteo_test_split(const std::shared_ptr<const dataset>& test,
                                      const ctr_layout& layout) {
  if (!test || test->criteo.rows() == 0)
    throw std::invalid_argument(std::string(needs_criteo) + "; the test split has no such rows");
  const auto& split = test->criteo;
  if (split.dense_width != layout.dense || split.fields != layout.fields)
    throw std::invalid_argument("the test split has " + std::to_string(split.dense_width)
                                + " dense values and " + std::to_string(split.fields)
                                + " key fields a row; the model reads "
                                + std::to_string(layout.dense) + " and "
                                + std::to_string(layout.fields));
  return split;
}

const ctr_bags* batch_bags::of(const criteo_batch& b) {
  if (b.offsets.empty()) return nullptr;
  // offsets are uint32 below 2^31 (a batch's keys), read as the kernels' int32
  const auto* offsets = reinterpret_cast<const int32_t*>(b.offsets.data());
  ctr_bag_scales(offsets, static_cast<int>(b.rows()), b.fields, b.mean_fields, scale_);
  bags_ = {offsets, scale_.data()};
  return &bags_;
}

std::string criteo_plugin::check_source(data_source::kind what) const {
  if (what == data_source::kind::logs) return "";
  if (what == data_source::kind::criteo)
    return layout_ == ctr_layout{} ? ""
                                   : "the model reads " + std::to_string(layout_.dense)
                                       + " dense values and " + std::to_string(layout_.fields)
                                       + " key fields a row; criteo:PATH gives 13 and 26";
  return needs_criteo;
}

std::unique_ptr<model_plugin> criteo_plugin::for_schema(const feature_schema& schema) const {
  // A shape the user wrote (`dlrm:5x7`) is kept, and check_schema says whether the log fits it;
  // only the default one takes the schema's.
  const auto layout = layout_of(schema);
  if (layout_ != ctr_layout{} || layout == layout_ || schema.dense_width < 1 || schema.fields < 1)
    return nullptr;
  return with_layout(layout);
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
