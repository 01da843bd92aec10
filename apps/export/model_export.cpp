#include "apps/export/model_export.hpp"

#include "apps/export/onnx_model.hpp"
#include "apps/export/versioned_dir.hpp"
#include "actors/model/mlp_plugin.hpp"
#include "kernels/mlp.hpp"

#include <stdexcept>

namespace actorps {

float input_divisor_for(const std::string& dataset) {
  return dataset == "fashion-mnist" ? pixel_divisor : 1.0f;
}

export_result export_model(const train_spec& spec, const std::vector<float>& params,
                           const run_info& run, const dataset& test, const std::string& dir) {
  // The export format (model.capnp's fixed network, ONNX, predict) describes MLPs only.
  const auto layers = mlp_layers(spec.model);
  if (!layers)
    throw std::invalid_argument("export: the model " + spec.model.name
                                + " is not an MLP; only MLPs can be exported so far");
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
  const auto metadata = make_export_metadata(spec, model, run, result.test,
                                             std::chrono::system_clock::now());
  staged_version staged(dir);
  staged.write_file(model_capnp_name, capnp);
  staged.write_file(onnx_model_name, onnx);
  staged.write_file(metadata_json_name, metadata);
  result.version = staged.publish();
  result.path = staged.path();
  result.capnp_bytes = capnp.size();
  result.onnx_bytes = onnx.size();
  result.metadata_bytes = metadata.size();
  return result;
}

} // namespace actorps
