// Logistic regression on Criteo logs (or a log a schema describes), the wide part of a CTR model:
//   actorps simulate --model lr --dataset criteo:train.tsv --test test.tsv
// p(click) = σ(bias + Σ_j w_j·x_j + Σ_f v[key_f]): one weight per hashed categorical value (the
// sparse table "wide", dim 1, zeros; a value's key is criteo_key(field, value), so the same
// string in two fields has two weights) and one per transformed integer feature x_j =
// log(1 + max(I_j, 0)) (the dense tensor "dense/kernel" [13]) plus "bias" [1]. The table's rows
// learn by FTRL-proximal on the shards (as sparse-lr's), the dense tensors by the run's
// --optimizer. `lr:adagrad` picks Adagrad for the table.
#pragma once

#include "actors/model/criteo_model.hpp"
#include "kernels/sparse/row_optimizer.hpp"

#include <memory>
#include <string>

namespace actorps {

/// The spec: "dense/kernel" [layout.dense] and "bias" [1] (zeros) and the table "wide" (dim 1,
/// zeros, sparse_lr_optimizer(kind)); named "lr:ftrl" or "lr:adagrad", and the layout's suffix
/// (layout_suffix) for rows other than Criteo's.
model_spec criteo_lr_model(row_optimizer_kind kind, const ctr_layout& layout = {});

/// The registry's factory: `args` "" or "ftrl", or "adagrad"; throws model_error otherwise.
std::unique_ptr<model_plugin> make_criteo_lr_plugin(const std::string& args);

} // namespace actorps
