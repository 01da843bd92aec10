#include "apps/export/export_metadata.hpp"

#include "apps/export/onnx_model.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdlib>
#include <ctime>

namespace actorps {

namespace {

using json = nlohmann::ordered_json;

/// A float as the shortest decimal that reads back as it (0.05f → 0.05, not 0.0500000007).
double shortest(float value) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;
  *end = '\0';
  return std::strtod(buf, nullptr);
}

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

json optimizer_json(const optimizer_config& o) {
  json out = {{"name", to_string(o.kind)}, {"learning_rate", shortest(o.learning_rate)}};
  switch (o.kind) {
    case optimizer_kind::sgd: break;
    case optimizer_kind::momentum: out["momentum"] = shortest(o.momentum); break;
    case optimizer_kind::adam:
      out["beta1"] = shortest(o.beta1);
      out["beta2"] = shortest(o.beta2);
      out["epsilon"] = shortest(o.epsilon);
      break;
    case optimizer_kind::adagrad: out["epsilon"] = shortest(o.epsilon); break;
  }
  return out;
}

json batch_shape(int width) { return json::array({"N", width}); }

} // namespace

std::string make_export_metadata(const train_spec& spec, const exported_model& model,
                                 const run_info& run, const model_metrics& test,
                                 std::chrono::system_clock::time_point created) {
  json tensors = json::array();
  for (const auto& slot : tensor_slots(model.layers))
    tensors.push_back({{"name", slot.name}, {"shape", slot.shape}});
  const bool pixels = model.input_divisor == pixel_divisor;
  json meta = {
    {"format", "actorps export"},
    {"format_version", 1},
    {"actorps_version", ACTORPS_VERSION},
    {"created_utc", iso8601_utc(created)},
    {"test_accuracy", test.accuracy},
    {"test_loss", test.loss},
    {"model",
     {{"type", "mlp"},
      {"layers", model.layers},
      {"hidden_activation", "relu"},
      {"output_activation", "softmax"},
      {"parameters", model.parameters.size()},
      {"tensors", tensors}}},
    {"input",
     {{"name", onnx_input_name},
      {"dtype", "float32"},
      {"shape", batch_shape(model.layers.front())},
      {"divisor", shortest(model.input_divisor)},
      {"scaling", pixels ? "uint8 pixel / 255, into [0, 1] (as in training); images 28x28 "
                           "row-major"
                         : "features as they are (no scaling)"}}},
    {"output",
     {{"name", onnx_output_name},
      {"dtype", "float32"},
      {"shape", batch_shape(model.layers.back())},
      {"meaning", "class probabilities (softmax); the predicted class is the most probable"}}},
    {"files",
     {{"model.capnp", "schema/model_export.capnp ExportedModel"},
      {"model.onnx", "ONNX opset " + std::to_string(onnx_opset) + ", IR version "
                       + std::to_string(onnx_ir_version)}}},
    {"training",
     {{"source", run.source},
      {"dataset", run.dataset},
      {"mode", to_string(spec.mode)},
      {"staleness", spec.staleness},
      {"staleness_bound", spec.staleness_bound()},
      {"workers", spec.workers},
      {"shards", spec.shards},
      {"optimizer", optimizer_json(spec.optimizer)},
      {"lr_schedule", to_string(spec.schedule)},
      {"batch", run.batch},
      {"clocks", run.clocks},
      {"samples", run.samples},
      {"seed", spec.seed},
      {"wall_s", run.wall_s},
      {"backend", run.backend}}},
    {"evaluation",
     {{"dataset", run.dataset},
      {"split", "test"},
      {"rows", test.rows},
      {"correct", test.correct},
      {"accuracy", test.accuracy},
      {"loss", test.loss},
      {"loss_definition", "mean over rows of -ln p(label), p floored at FLT_MIN"},
      {"computed_by", "actorps' CPU backend on these parameters (actorps evaluate repeats it)"}}},
  };
  return meta.dump(2) + "\n";
}

} // namespace actorps
