#include "actors/serving/model_export.hpp"

#include "actors/protocol/digest.hpp"
#include "actors/serving/ctr_model_file.hpp"
#include "actors/serving/ctr_onnx.hpp"
#include "actors/serving/ctr_scoring.hpp"
#include "actors/serving/onnx_model.hpp"
#include "actors/serving/program_model.hpp"
#include "actors/serving/served_model.hpp"
#include "actors/serving/versioned_dir.hpp"
#include "actors/serving/vocab_files.hpp"
#include "actors/model/mlp_plugin.hpp"
#include "kernels/mlp.hpp"

#include <chrono>
#include <stdexcept>

namespace actorps {

float input_divisor_for(const std::string& dataset) {
  return dataset == "fashion-mnist" ? pixel_divisor : 1.0f;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Publishes `staged` (its files written) and records in `result` what every version reports:
/// its number, path, the sizes of model.capnp, model.onnx and metadata.json, the model's
/// SHA-256 and the seconds since `start`.
void publish(staged_version& staged, const std::string& capnp, const std::string& onnx,
             const std::string& metadata, std::chrono::steady_clock::time_point start,
             export_result& result) {
  result.version = staged.publish();
  result.path = staged.path();
  result.capnp_bytes = capnp.size();
  result.onnx_bytes = onnx.size();
  result.metadata_bytes = metadata.size();
  result.model_sha256 = sha256_hex(capnp);
  result.seconds = seconds_since(start);
}

export_result export_ctr_model(const train_spec& spec, const trained_parameters& params,
                               const run_info& run, const dataset& test, const std::string& dir,
                               const std::string& chain) {
  const auto start = std::chrono::steady_clock::now();
  if (params.tables.size() != spec.model.sparse_tables.size())
    throw std::invalid_argument("export: the model " + spec.model.name + " has "
                                + std::to_string(spec.model.sparse_tables.size())
                                + " sparse tables, the run left "
                                + std::to_string(params.tables.size()));
  if (test.criteo.rows() == 0)
    throw std::invalid_argument("export: the test split holds no Criteo rows to evaluate "
                                + spec.model.name + " on");
  const auto model = make_ctr_model(
    spec.model, params.dense, params.tables,
    run.schema_path.empty() ? std::string() : self_contained_schema(run.schema_path),
    run.delimiter);
  const auto test_metrics = evaluate_ctr_model(model, test.criteo);
  auto metadata = make_ctr_export_metadata(spec, model, run, test_metrics,
                                           std::chrono::system_clock::now());
  if (!chain.empty()) metadata = with_chain(metadata, chain);
  auto result = write_ctr_version(model, metadata, dir);
  result.test = test_metrics;
  result.seconds = seconds_since(start);
  return result;
}

} // namespace

export_result write_model_version(const std::string& dir, const std::string& model_name,
                                  const std::string& model_bytes, const std::string& metadata,
                                  std::chrono::steady_clock::time_point start) {
  staged_version staged(dir);
  staged.write_file(model_name, model_bytes);
  staged.write_file(metadata_json_name, metadata);
  export_result result;
  publish(staged, model_bytes, {}, metadata, start, result);
  return result;
}

export_result write_ctr_version(const ctr_model& model, const std::string& metadata,
                                const std::string& dir) {
  const auto start = std::chrono::steady_clock::now();
  export_result result;
  const auto capnp = encode_ctr_model(model);
  decode_served_model(capnp, model_capnp_name);  // what a reader will check, checked now
  // A schema's model has no ONNX graph: its multi-hot bags pool per sample, which the graph's
  // one row per field cannot say (SCHEMA_FORMAT.md).
  const auto onnx = model.shaped() ? std::string() : make_ctr_onnx_model(model, ACTORPS_VERSION);
  std::vector<std::string> vocab;
  for (std::size_t f = 0; f < model.fields.size(); ++f)
    vocab.push_back(vocab_file_text(served_keys(model, f)));
  std::vector<std::pair<std::string, const std::string*>> files{{model_capnp_name, &capnp}};
  if (!model.shaped()) files.emplace_back(onnx_model_name, &onnx);
  for (std::size_t f = 0; f < vocab.size(); ++f) files.emplace_back(vocab_file_name(f), &vocab[f]);
  const auto checked_metadata = with_checksums(metadata, files);
  staged_version staged(dir);
  staged.write_file(model_capnp_name, capnp);
  if (!model.shaped()) staged.write_file(onnx_model_name, onnx);
  staged.make_dir(vocab_dir_name);
  for (std::size_t f = 0; f < vocab.size(); ++f) {
    staged.write_file(vocab_file_name(f), vocab[f]);
    result.vocab_bytes += vocab[f].size();
  }
  staged.write_file(metadata_json_name, checked_metadata);
  publish(staged, capnp, onnx, checked_metadata, start, result);
  return result;
}

export_result export_trained_model(const train_spec& spec, const trained_parameters& params,
                                   const run_info& run, const dataset& test,
                                   const std::string& dir, const std::string& chain) {
  if (ctr_kind_of(spec.model)) return export_ctr_model(spec, params, run, test, dir, chain);
  if (mlp_layers(spec.model) && params.tables.empty())
    return export_model(spec, params.dense, run, test, dir, chain);
  // A network actorps does not know: its tensors and rows, for the program that trained it.
  if (!chain.empty())
    throw std::invalid_argument("export: the model " + spec.model.name + " has no network "
                                "actorps knows; export versions while training are for MLPs, "
                                "lr, dlrm, wdl and deepfm");
  return export_program_model(spec, params, run, dir);
}

export_result export_model(const train_spec& spec, const std::vector<float>& params,
                           const run_info& run, const dataset& test, const std::string& dir,
                           const std::string& chain) {
  const auto start = std::chrono::steady_clock::now();
  // The export format (model.capnp's fixed network, ONNX, predict) describes MLPs only.
  const auto layers = mlp_layers(spec.model);
  if (!layers)
    throw std::invalid_argument("export: the model " + spec.model.name
                                + " is not an MLP; export_model writes MLPs only");
  if (params.size() != mlp_parameter_count(*layers))
    throw std::invalid_argument("export: " + std::to_string(params.size()) + " parameters, layers "
                                + to_string(*layers) + " need "
                                + std::to_string(mlp_parameter_count(*layers)));
  const exported_model model{*layers, params, input_divisor_for(run.dataset)};
  export_result result;
  result.test = evaluate_model(model, test);
  const auto capnp = encode_exported_model(model);
  decode_exported_model(capnp, model_capnp_name);  // what a reader will check, checked now
  const auto onnx = make_onnx_model(model, ACTORPS_VERSION);
  auto metadata = make_export_metadata(spec, model, run, result.test,
                                       std::chrono::system_clock::now());
  if (!chain.empty()) metadata = with_chain(metadata, chain);
  const auto checked_metadata =
    with_checksums(metadata, {{model_capnp_name, &capnp}, {onnx_model_name, &onnx}});
  staged_version staged(dir);
  staged.write_file(model_capnp_name, capnp);
  staged.write_file(onnx_model_name, onnx);
  staged.write_file(metadata_json_name, checked_metadata);
  publish(staged, capnp, onnx, checked_metadata, start, result);
  return result;
}

} // namespace actorps
