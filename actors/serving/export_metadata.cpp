#include "actors/serving/export_metadata.hpp"

#include "actors/protocol/digest.hpp"

#include "actors/serving/ctr_onnx.hpp"
#include "actors/serving/onnx_model.hpp"
#include "actors/serving/program_model.hpp"
#include "actors/serving/vocab_files.hpp"

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
  const auto reads = optimizer_hyper_parameters(o.kind);
  if (reads & hyper_momentum) out["momentum"] = shortest(o.momentum);
  if (reads & hyper_betas) {
    out["beta1"] = shortest(o.beta1);
    out["beta2"] = shortest(o.beta2);
  }
  if (reads & hyper_epsilon) out["epsilon"] = shortest(o.epsilon);
  return out;
}

json batch_shape(int width) { return json::array({"N", width}); }

/// How the parameters were trained.
json training_json(const train_spec& spec, const run_info& run) {
  return {{"source", run.source},
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
          {"backend", run.backend}};
}

/// The model, its input layout and its files, for a CTR model.
json ctr_model_json(const ctr_model& model) {
  json tensors = json::array();
  for (const auto& slot : model.tensor_slots())
    tensors.push_back({{"name", slot.name}, {"shape", slot.shape}});
  std::size_t rows = 0, wide_rows = 0;
  for (const auto& f : model.fields) rows += f.keys.size();
  for (const auto& f : model.wide) wide_rows += f.keys.size();
  json out = {{"type", to_string(model.kind)},
              {"model", model.name},
              {"dense_parameters", model.dense.size()},
              {"tensors", tensors},
              {"table", {{"name", model.table}, {"dim", model.dim()}, {"rows", rows}}}};
  if (model.has_wide()) {
    out["wide_table"] = {{"name", ctr_wide_table}, {"dim", 1}, {"rows", wide_rows}};
    out["dim"] = model.shape.dim;
    out["deep_layers"] = model.wide_deep_sizes().deep_layers();
    out["formula"] = std::string("p = sigmoid(sum over fields of the key's wide weight + "
                                 "linear/kernel . dense + deep MLP(e_C1, ..., e_C26, dense)")
                     + (model.kind == ctr_kind::deepfm
                          ? " + 0.5 * sum over dim of ((sum of e)^2 - sum of e^2))"
                          : ")");
    out["activations"] = "ReLU between deep layers; sigmoid output";
  } else if (model.kind == ctr_kind::dlrm) {
    out["dim"] = model.shape.dim;
    out["bottom_layers"] = model.shape.bottom_layers();
    out["top_layers"] = model.shape.top_layers();
    out["interaction"] = "the dot products v_i . v_j, i > j, of v = (bottom output, e_C1, ..., "
                         "e_C26), in the order (1,0), (2,0), (2,1), (3,0), ...: pair (i, j) at "
                         "i(i-1)/2 + j, after the bottom output in the top MLP's input";
    out["activations"] = "ReLU after every bottom layer and between top layers; sigmoid output";
  } else {
    out["formula"] = "p = sigmoid(bias + dense/kernel . dense + sum over fields of the key's "
                     "weight)";
  }
  out["unknown_key"] = "row 0 of each field's matrix, zeros";
  return out;
}

json criteo_layout_json(const ctr_model& model) {
  json dense = json::array(), fields = json::array();
  for (int j = 0; j < model.shape.dense_in; ++j) dense.push_back("I" + std::to_string(j + 1));
  for (std::size_t f = 0; f < model.fields.size(); ++f)
    fields.push_back({{"name", "C" + std::to_string(f + 1)},
                      {"vocabulary", vocab_file_name(f)},
                      {"rows", served_keys(model, f).size() + 1}});
  return {
    {"name", "criteo"},
    {"line", "label<TAB>I1<TAB>...<TAB>I13<TAB>C1<TAB>...<TAB>C26 (plain or gzip)"},
    {"label", "0 or 1 (read, not used by predict)"},
    {"dense", {{"fields", dense},
               {"transform", "log(1 + max(x, 0)); a missing value is 0"}}},
    {"categorical",
     {{"fields", fields},
      {"key", "(f << 56) | the value's 64-bit hash in its low 56 bits (1 if those are 0), f = 0 "
              "for C1; a missing (empty) value is f << 56. Python: actorps.feature_key(f, value); "
              "C++: actorps::feature_key (actors/ps/feature_key.hpp)"},
      {"hash", "over the value's bytes, all arithmetic mod 2^64: h = 0x9e3779b97f4a7c15 xor "
               "length; for each 8-byte little-endian word w (the last zero-padded): h = mix(h "
               "xor w) + 0x632be59bd9b4e019; hash = mix(h), where mix(z): z = (z xor z >> 30) * "
               "0xbf58476d1ce4e5b9; z = (z xor z >> 27) * 0x94d049bb133111eb; z xor z >> 31"},
      {"row", "the key's row in the field's vocabulary file; 0 for a key not in it"}}}};
}

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
    {"training", training_json(spec, run)},
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

std::string make_program_export_metadata(const train_spec& spec, const program_model& model,
                                         const run_info& run,
                                         std::chrono::system_clock::time_point created) {
  json tensors = json::array(), tables = json::array();
  for (const auto& t : model.tensors) tensors.push_back({{"name", t.name}, {"shape", t.shape}});
  for (const auto& t : model.tables)
    tables.push_back({{"name", t.name}, {"dim", t.dim}, {"rows", t.keys.size()}});
  json meta = {
    {"format", "actorps export"},
    {"format_version", 3},
    {"actorps_version", ACTORPS_VERSION},
    {"created_utc", iso8601_utc(created)},
    {"model", {{"type", "program"}, {"name", model.name}, {"tensors", tensors},
               {"sparse_tables", tables}}},
    {"files",
     {{"model.capnp", "schema/model_export.capnp ExportedModel, format 3 (tensors by name, "
                      "every row of each table; no network: the training program serves it)"}}},
    {"training", training_json(spec, run)}};
  return meta.dump(2) + "\n";
}

std::string make_ctr_export_metadata(const train_spec& spec, const ctr_model& model,
                                     const run_info& run, const model_metrics& test,
                                     std::chrono::system_clock::time_point created) {
  json meta = {
    {"format", "actorps export"},
    {"format_version", 2},
    {"actorps_version", ACTORPS_VERSION},
    {"created_utc", iso8601_utc(created)},
    {"model_string", model.name},
    {"test_auc", test.auc},
    {"test_logloss", test.loss},
    {"model", ctr_model_json(model)},
    {"layout", criteo_layout_json(model)},
    {"input",
     json::array({{{"name", onnx_dense_input},
                   {"dtype", "float32"},
                   {"shape", batch_shape(model.shape.dense_in)},
                   {"meaning", "I1..I13 transformed as layout.dense says"}},
                  {{"name", onnx_indices_input},
                   {"dtype", "int64"},
                   {"shape", batch_shape(static_cast<int>(model.fields.size()))},
                   {"meaning", "C1..C26: each key's row in vocab/C<f>.tsv, 0 when not there"}}})},
    {"output",
     {{"name", onnx_probability_output},
      {"dtype", "float32"},
      {"shape", batch_shape(1)},
      {"meaning", "p(click)"}}},
    {"files",
     {{"model.capnp", "schema/model_export.capnp ExportedModel, format 2 (CtrModel)"},
      {"model.onnx", "ONNX opset " + std::to_string(onnx_opset) + ", IR version "
                       + std::to_string(onnx_ir_version)},
      {"vocab", "vocab/C1.tsv ... vocab/C26.tsv: key<TAB>row, rows from 1"}}},
    {"training", training_json(spec, run)},
    {"evaluation",
     {{"dataset", run.dataset},
      {"test_file", run.test_path},
      {"split", "test"},
      {"rows", test.rows},
      {"auc", test.auc},
      {"logloss", test.loss},
      {"accuracy", test.accuracy},
      {"loss_definition", "mean over rows of -[y ln p + (1-y) ln(1-p)], from the logits"},
      {"computed_by", "actorps' CPU backend on these parameters, keys not in the vocabulary on "
                      "row 0 (actorps evaluate repeats it)"}}},
  };
  if (model.shaped()) {  // a log's model: its schema, no ONNX graph (bags pool per sample)
    std::vector<std::string> vocab;
    for (std::size_t t = 0; t < model.fields.size(); ++t) vocab.push_back(vocab_file_name(t));
    meta["layout"] = {
      {"name", "schema"},
      {"schema", json::parse(model.schema)},
      {"delimiter", std::string(1, model.delimiter)},
      {"dense_width", model.shape.dense_in},
      {"fields", model.input->field_names},
      {"field_tables", model.field_tables},
      {"mean_pooling", model.mean_fields},
      {"tables", vocab},
      {"line", "the schema's columns in order, cut at the delimiter (actors/data/"
               "SCHEMA_FORMAT.md); actorps predict and evaluate read them so"},
      {"key", "(table << 56) | the value's hash, as Criteo's keys with the table for the field"},
      {"row", "a field's row is the pool (sum or mean) of its bag's keys' rows, each key's row "
              "the one in its table's vocabulary file, zeros when not there"}};
    meta.erase("input");
    meta.erase("output");
    meta["files"].erase("model.onnx");
    meta["files"]["vocab"] = "vocab/C<t>.tsv per table t + 1 of layout.field_tables: key<TAB>row";
  }
  return meta.dump(2) + "\n";
}

std::string with_checksums(const std::string& metadata,
                           const std::vector<std::pair<std::string, const std::string*>>& files) {
  auto meta = json::parse(metadata);
  auto& sums = meta["sha256"] = json::object();
  for (const auto& [name, bytes] : files) sums[name] = sha256_hex(*bytes);
  return meta.dump(2) + "\n";
}

std::string make_delta_export_metadata(const ctr_model& changed, std::size_t removed,
                                       const std::string& chain,
                                       std::chrono::system_clock::time_point created) {
  std::size_t rows = 0;  // of both tables for wdl and deepfm, as the shards count them
  for (const auto& f : changed.fields) rows += f.keys.size();
  for (const auto& f : changed.wide) rows += f.keys.size();
  json meta = {
    {"format", "actorps export"},
    {"format_version", 2},
    {"actorps_version", ACTORPS_VERSION},
    {"created_utc", iso8601_utc(created)},
    {"model_string", changed.name},
    {"delta",
     {{"rows", rows}, {"removed_keys", removed}, {"dense_parameters", changed.dense.size()}}},
    {"files",
     {{"delta.capnp", "schema/model_export.capnp ExportDelta: the rows changed since the "
                      "predecessor, the keys removed since, every dense tensor"}}},
    {"chain", json::parse(chain)},
  };
  return meta.dump(2) + "\n";
}

std::string with_chain(const std::string& metadata, const std::string& chain) {
  auto meta = json::parse(metadata);
  meta["chain"] = json::parse(chain);
  return meta.dump(2) + "\n";
}

std::string consolidated_metadata(const std::string& base_metadata, const ctr_model& model,
                                  const std::string& chain,
                                  std::chrono::system_clock::time_point created) {
  auto meta = json::parse(base_metadata);
  meta["created_utc"] = iso8601_utc(created);
  meta["model"] = ctr_model_json(model);
  meta["layout"] = criteo_layout_json(model);
  meta.erase("test_auc");
  meta.erase("test_logloss");
  meta.erase("sha256");  // the new files' come after
  meta["evaluation"] = {{"note", "not evaluated when consolidated: actorps evaluate scores it"}};
  meta["chain"] = json::parse(chain);
  return meta.dump(2) + "\n";
}

std::string recorded_sha256(const std::string& metadata, const std::string& file) {
  json meta;
  try {
    meta = json::parse(metadata);
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("not valid JSON: ") + e.what());
  }
  if (!meta.is_object()) throw std::invalid_argument("not a JSON object");
  auto sums = meta.find("sha256");
  if (sums == meta.end() || !sums->is_object()) return "";
  auto sum = sums->find(file);
  return sum != sums->end() && sum->is_string() ? sum->get<std::string>() : "";
}

} // namespace actorps
