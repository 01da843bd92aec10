#include "actors/serving/ctr_scoring.hpp"

#include "actors/model/criteo_model.hpp"  // binary_metrics_from_logits
#include "kernels/ctr_bags.hpp"
#include "kernels/ctr_math.hpp"
#include "kernels/dlrm.hpp"
#include "kernels/sparse_logistic.hpp"
#include "kernels/wide_deep.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace actorps {

namespace {

constexpr int eval_chunk = 4096;  // samples per forward pass, as the run's evaluation

/// The batch's distinct rows, gathered from the field matrices, and each use's place among
/// them: what the kernels take (table_rows' values and inverse).
struct used_rows {
  std::vector<float> values;     // u × dim
  std::vector<uint32_t> index;   // rows × fields, into [0, u)
};

used_rows gather_used_rows(const std::vector<ctr_field>& matrices, std::size_t dim,
                           const std::vector<int64_t>& rows_of_keys) {
  const auto fields = matrices.size();
  std::vector<uint64_t> base(fields, 0);  // field f's rows are numbered from base[f] on
  for (std::size_t f = 1; f < fields; ++f)
    base[f] = base[f - 1] + matrices[f - 1].keys.size() + 1;
  std::vector<uint64_t> global(rows_of_keys.size());
  for (std::size_t i = 0; i < global.size(); ++i)
    global[i] = base[i % fields] + static_cast<uint64_t>(rows_of_keys[i]);
  std::vector<uint64_t> distinct = global;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  used_rows out;
  out.index.resize(global.size());
  for (std::size_t i = 0; i < global.size(); ++i)
    out.index[i] = static_cast<uint32_t>(
      std::lower_bound(distinct.begin(), distinct.end(), global[i]) - distinct.begin());
  out.values.resize(distinct.size() * dim);
  std::size_t f = 0;
  for (std::size_t u = 0; u < distinct.size(); ++u) {  // ascending: fields in order
    while (f + 1 < fields && distinct[u] >= base[f + 1]) ++f;
    const auto* row = matrices[f].rows.data() + (distinct[u] - base[f]) * dim;
    std::copy(row, row + dim, out.values.begin() + static_cast<std::ptrdiff_t>(u * dim));
  }
  return out;
}

/// rows × fields: the row of each sample's key in its field's matrix of `matrices`.
std::vector<int64_t> rows_in(const std::vector<ctr_field>& matrices, const criteo_batch& batch) {
  const auto fields = matrices.size();
  std::vector<int64_t> rows(batch.keys.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    rows[i] = matrices[i % fields].row_of(batch.keys[i]);
  return rows;
}

/// The kernels' view of a batch's rows of one table.
ctr_rows kernel_rows(const used_rows& used, std::size_t dim) {
  return {used.values.data(), static_cast<int>(used.values.size() / dim),
          reinterpret_cast<const int32_t*>(used.index.data())};
}

/// wdl and deepfm as the plug-in's evaluation scores them: kernels/wide_deep on each table's
/// rows, in chunks of its evaluation.
std::vector<float> wide_deep_logits(backend& be, const ctr_model& model, const float* dense,
                                    const ctr_rows& embeddings, const ctr_rows& weights, int n,
                                    const ctr_bags* bags) {
  wide_deep net(be, model.wide_deep_sizes(), std::min(eval_chunk, std::max(n, 1)));
  net.set_parameters(model.dense.data());
  std::vector<float> z(static_cast<std::size_t>(n));
  net.predict_logits(dense, embeddings, weights, n, z.data(), bags);
  return z;
}

/// lr: as the plug-in's wide model — the keys' weights and the bias by sparse_logits, then the
/// dense features' dot product in double.
std::vector<float> lr_logits(const ctr_model& model, const criteo_batch& batch,
                             const used_rows& used) {
  const std::size_t n = batch.rows();
  const auto fields = model.fields.size();
  const auto dense_in = static_cast<std::size_t>(model.shape.dense_in);
  std::vector<uint64_t> offsets(n + 1);
  for (std::size_t r = 0; r <= n; ++r) offsets[r] = r * fields;
  const std::vector<float> ones(n * fields, 1.0f);
  std::vector<float> z(n);
  const float* w = model.dense.data();  // dense/kernel [13], then bias
  sparse_logits(offsets.data(), n, ones.data(), used.index.data(), used.values.data(),
                w[dense_in], z.data());
  for (std::size_t r = 0; r < n; ++r) {
    double dot = 0;
    for (std::size_t j = 0; j < dense_in; ++j) dot += double(w[j]) * batch.dense[r * dense_in + j];
    z[r] += static_cast<float>(dot);
  }
  return z;
}

std::vector<float> dlrm_logits(backend& be, const ctr_model& model, const criteo_batch& batch,
                               const used_rows& used) {
  const int n = static_cast<int>(batch.rows());
  dlrm net(be, model.shape, std::min(eval_chunk, std::max(n, 1)));
  net.set_parameters(model.dense.data());
  std::vector<float> z(batch.rows());
  net.predict_logits(batch.dense.data(), used.values.data(),
                     static_cast<int>(used.values.size() / static_cast<std::size_t>(model.dim())),
                     reinterpret_cast<const int32_t*>(used.index.data()), n, z.data());
  return z;
}

/// A schema's model on its rows, as the run's evaluation scores them (dlrm_plugin's and
/// criteo_lr_plugin's): the batch's distinct keys, each with its row from its table's matrix
/// (zeros for a key the model never saw), every bag pooled by the kernels.
std::vector<float> schema_logits(backend& be, const ctr_model& model, const criteo_batch& batch) {
  const std::size_t n = batch.rows();
  const auto dim = static_cast<std::size_t>(model.dim());
  const auto fields = static_cast<std::size_t>(model.shape.fields);
  const bool bags = !batch.offsets.empty();
  if (batch.dense_width != model.shape.dense_in || batch.fields != model.shape.fields
      || batch.dense.size() != n * static_cast<std::size_t>(model.shape.dense_in)
      || (!bags && batch.keys.size() != n * fields))
    throw std::invalid_argument("the rows do not have the model's "
                                + std::to_string(model.shape.dense_in) + " dense values and "
                                + std::to_string(fields) + " key fields");
  std::vector<uint64_t> keys = batch.keys;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<int32_t> index(batch.keys.size());
  for (std::size_t i = 0; i < index.size(); ++i)
    index[i] = static_cast<int32_t>(std::lower_bound(keys.begin(), keys.end(), batch.keys[i])
                                    - keys.begin());
  auto values_in = [&](const std::vector<ctr_field>& matrices, std::size_t width) {
    std::vector<float> values(keys.size() * width);
    for (std::size_t u = 0; u < keys.size(); ++u) {
      const auto table = static_cast<std::size_t>(keys[u] >> 56);
      if (table >= matrices.size()) continue;  // a table no field of the model hashes into: zeros
      const auto& f = matrices[table];
      const auto* row = f.rows.data() + f.row_of(keys[u]) * width;
      std::copy(row, row + width, values.begin() + static_cast<std::ptrdiff_t>(u * width));
    }
    return values;
  };
  const auto values = values_in(model.fields, dim);
  // Each bag's pooling scale (1, or 1/length for a mean), as batch_bags gives the kernels.
  std::vector<float> scale;
  ctr_bags pooled;
  if (bags) {
    const auto* offsets = reinterpret_cast<const int32_t*>(batch.offsets.data());
    ctr_bag_scales(offsets, static_cast<int>(n), static_cast<int>(fields), model.mean_fields,
                   scale);
    pooled = {offsets, scale.data()};
  }
  if (model.has_wide()) {
    const auto weights = values_in(model.wide, 1);
    const int u = static_cast<int>(keys.size());
    return wide_deep_logits(be, model, batch.dense.data(), {values.data(), u, index.data()},
                            {weights.data(), u, index.data()}, static_cast<int>(n),
                            bags ? &pooled : nullptr);
  }
  std::vector<float> z(n);
  if (model.kind == ctr_kind::dlrm) {
    dlrm net(be, model.shape, std::min(eval_chunk, std::max(static_cast<int>(n), 1)));
    net.set_parameters(model.dense.data());
    net.predict_logits(batch.dense.data(), values.data(), static_cast<int>(keys.size()),
                       index.data(), static_cast<int>(n), z.data(), bags ? &pooled : nullptr);
    return z;
  }
  // lr, as criteo_lr_plugin's wide model: each key of a sample at its bag's scale (1 without
  // bags), the bias by sparse_logits, then the dense features' dot product in double.
  std::vector<uint64_t> offsets(n + 1);
  std::vector<float> weight(batch.keys.size(), 1.0f);
  for (std::size_t r = 0; r <= n; ++r) offsets[r] = bags ? batch.offsets[r * fields] : r * fields;
  if (bags)
    for (std::size_t bag = 0; bag < n * fields; ++bag)
      for (auto k = batch.offsets[bag]; k < batch.offsets[bag + 1]; ++k) weight[k] = scale[bag];
  const auto dense_in = static_cast<std::size_t>(model.shape.dense_in);
  const float* w = model.dense.data();  // dense/kernel [dense_in], then bias
  sparse_logits(offsets.data(), n, weight.data(), reinterpret_cast<const uint32_t*>(index.data()),
                values.data(), w[dense_in], z.data());
  for (std::size_t r = 0; r < n; ++r) {
    double dot = 0;
    for (std::size_t j = 0; j < dense_in; ++j) dot += double(w[j]) * batch.dense[r * dense_in + j];
    z[r] += static_cast<float>(dot);
  }
  return z;
}

} // namespace

std::vector<int64_t> ctr_row_indices(const ctr_model& model, const criteo_batch& batch) {
  const auto fields = model.fields.size();
  if (batch.keys.size() != batch.rows() * fields
      || batch.dense.size() != batch.rows() * static_cast<std::size_t>(model.shape.dense_in))
    throw std::invalid_argument("the rows do not have the model's " + std::to_string(fields)
                                + " categorical and " + std::to_string(model.shape.dense_in)
                                + " integer fields");
  if (!model.has_wide()) return rows_in(model.fields, batch);
  std::vector<ctr_field> vocab(fields);  // the served vocabularies, both tables' keys
  for (std::size_t f = 0; f < fields; ++f) vocab[f].keys = served_keys(model, f);
  return rows_in(vocab, batch);
}

std::vector<float> ctr_logits(backend& be, const ctr_model& model, const criteo_batch& batch) {
  if (batch.rows() == 0) return {};
  if (model.shaped()) return schema_logits(be, model, batch);
  const auto dim = static_cast<std::size_t>(model.dim());
  const auto served = ctr_row_indices(model, batch);  // checks the rows' sizes too
  const auto used =
    gather_used_rows(model.fields, dim, model.has_wide() ? rows_in(model.fields, batch) : served);
  if (model.has_wide()) {
    const auto weights = gather_used_rows(model.wide, 1, rows_in(model.wide, batch));
    return wide_deep_logits(be, model, batch.dense.data(), kernel_rows(used, dim),
                            kernel_rows(weights, 1), static_cast<int>(batch.rows()), nullptr);
  }
  return model.kind == ctr_kind::lr ? lr_logits(model, batch, used)
                                    : dlrm_logits(be, model, batch, used);
}

std::vector<float> ctr_probabilities(const std::vector<float>& logits) {
  std::vector<float> p(logits.size());
  std::transform(logits.begin(), logits.end(), p.begin(), math::sigmoid);
  return p;
}

model_metrics evaluate_ctr_model(const ctr_model& model, const criteo_batch& split) {
  auto be = make_cpu_backend();
  const auto z = ctr_logits(*be, model, split);
  const auto m = binary_metrics_from_logits(z.data(), split.labels.data(), split.rows());
  model_metrics out;
  out.rows = m.rows;
  out.classes = 2;
  out.accuracy = m.accuracy;
  out.correct = std::llround(m.accuracy * double(m.rows));
  out.loss = m.loss;
  out.auc = m.auc;
  return out;
}

} // namespace actorps
