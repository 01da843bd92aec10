// Wide & Deep and DeepFM on Criteo logs, or a log a schema describes (kernels/wide_deep.hpp):
//   actorps simulate --model wdl --dataset criteo:train.tsv --test test.tsv
//   actorps simulate --model deepfm:16:256-128 --dataset criteo:train.tsv --test test.tsv
// Each of the 26 categorical values has a DIM-wide embedding row in the sparse table
// "embeddings" and a weight in the sparse table "wide" (both keyed criteo_key(field, value),
// as dlrm's; Adagrad on the shards); the 13 transformed integer features enter the deep MLP
// beside the embeddings and the linear part. The logit is the wide part's, plus the
// factorization machine's (deepfm), plus the deep MLP's. The dense tensors are trained by the
// run's --optimizer.
#pragma once

#include "actors/ps/model_plugin.hpp"
#include "kernels/wide_deep.hpp"

#include <memory>
#include <string>

namespace actorps {

/// The model string's shape for "wdl" or "deepfm" (`fm`): "" → the defaults (dim 16, hidden
/// 256-128); otherwise DIM[:HIDDEN] with hidden widths joined by '-' (empty: no hidden layer),
/// and a last part DENSExFIELDS for rows other than Criteo's 13 dense values and 26 key fields
/// (take_layout). Throws model_error naming the expected form.
wide_deep_shape parse_wide_deep_shape(const std::string& args, bool fm);

/// "wdl:DIM:HIDDEN" or "deepfm:DIM:HIDDEN" (and ":DENSExFIELDS" off Criteo's layout), the name
/// the spec carries.
std::string wide_deep_name(const wide_deep_shape& shape);

/// The spec: the tensors of wide_deep_tensors ("linear/kernel" zeros, He-uniform kernels, zero
/// biases), the table "embeddings" (dim DIM, uniform init, Adagrad at 1.0 for wdl, 0.1 for
/// deepfm) and the table "wide" (dim 1, zeros, Adagrad at 0.1).
model_spec wide_deep_model(const wide_deep_shape& shape);

/// The registry's factories for "wdl[:ARGS]" and "deepfm[:ARGS]".
std::unique_ptr<model_plugin> make_wdl_plugin(const std::string& args);
std::unique_ptr<model_plugin> make_deepfm_plugin(const std::string& args);

} // namespace actorps
