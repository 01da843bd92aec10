// Logistic regression over hashed sparse features, trained from a libsvm file:
//   actorps simulate --model sparse-lr --dataset libsvm:train.libsvm --test test.libsvm
// p(y = 1 | x) = σ(bias + Σ_k w_k·x_k). The weights are the sparse table "weights" (dim 1,
// zeros; a feature index of the file is its key as written), trained by the table's row
// optimizer on the shards; "bias" is a dense tensor [1] (zeros), trained by the run's
// --optimizer. `sparse-lr` is `sparse-lr:ftrl`; `sparse-lr:adagrad` picks Adagrad instead.
//
// Each worker streams part `worker` of `workers` of the training file (libsvm_batches: clock c
// is the c-th batch of the part, epochs wrapping); the evaluation scores the test split, which
// the runtime loads whole, by exact ROC AUC, mean log loss and accuracy at p ≥ 0.5.
#pragma once

#include "actors/ps/model_plugin.hpp"
#include "kernels/sparse/row_optimizer.hpp"

#include <memory>
#include <string>

namespace actorps {

/// The weights' optimizer for `kind` (ftrl or adagrad), with the hyper-parameters measured to
/// reach, in one epoch, a test AUC within 0.01 of the best a model can on generated data (see
/// the .cpp). Gradients are of the mean loss over a batch. Throws std::invalid_argument for
/// another kind.
row_optimizer_config sparse_lr_optimizer(row_optimizer_kind kind);

/// The spec: the table "weights" (dim 1, zeros, sparse_lr_optimizer(kind)) and the tensor
/// "bias" [1] (zeros); named "sparse-lr:ftrl" or "sparse-lr:adagrad".
model_spec sparse_lr_model(row_optimizer_kind kind);

/// The registry's factory: `args` "" or "ftrl" (FTRL-proximal), or "adagrad"; throws
/// model_error for anything else.
std::unique_ptr<model_plugin> make_sparse_lr_plugin(const std::string& args);

} // namespace actorps
