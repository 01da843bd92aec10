// DLRM on Criteo logs, or a log a schema describes (kernels/dlrm.hpp):
//   actorps simulate --model dlrm:16:64-32:128-64 --dataset criteo:train.tsv --test test.tsv
// The 13 transformed integer features go through the bottom MLP to DIM floats; each of the 26
// categorical values has a DIM-wide embedding row in the sparse table "embeddings" (keys
// criteo_key(field, value): one table for every field, the field in the key's top byte), pulled
// from and pushed to the shards by key and trained there by Adagrad, as the field does; the
// pairwise dot products of the 27 vectors and the bottom output feed the top MLP, whose one
// output is the click logit. The MLPs are dense tensors trained by the run's --optimizer.
#pragma once

#include "actors/ps/model_plugin.hpp"
#include "kernels/dlrm.hpp"

#include <memory>
#include <string>

namespace actorps {

/// The model string's shape: "" → the defaults (dim 16, bottom 64-32, top 64-32); otherwise
/// DIM[:BOTTOM[:TOP]] with hidden widths joined by '-' (an empty BOTTOM or TOP: no hidden
/// layer), and a last part DENSExFIELDS for rows other than Criteo's 13 dense values and 26
/// key fields (take_layout). Throws model_error naming the expected form.
dlrm_shape parse_dlrm_shape(const std::string& args);

/// "dlrm:DIM:BOTTOM:TOP[:DENSExFIELDS]" for a shape, the name the spec carries
/// (parse_dlrm_shape reads it).
std::string dlrm_name(const dlrm_shape& shape);

/// The spec: the tensors of dlrm_tensors (He-uniform kernels, zero biases) and the table
/// "embeddings" (dim DIM, uniform init, Adagrad).
model_spec dlrm_model(const dlrm_shape& shape);

/// The registry's factory for "dlrm[:ARGS]".
std::unique_ptr<model_plugin> make_dlrm_plugin(const std::string& args);

} // namespace actorps
