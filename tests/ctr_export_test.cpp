// CTR models (lr, dlrm, wdl, deepfm) exported and served as a user meets them: `actorps simulate
// --export-dir` on a small generated Criteo set writes model.capnp, model.onnx, vocab/ and
// metadata.json; `actorps predict` gives the probabilities that the trained parameters give
// when computed here independently (from the run's final checkpoint, by a plain double-precision
// forward pass); `actorps evaluate` repeats metadata.json's AUC and logloss; `actorps export` of
// the checkpoint writes the same model; lines of another layout are refused.
#include "actors/data/criteo_reader.hpp"
#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "actors/serving/ctr_model_file.hpp"
#include "actors/serving/file_bytes.hpp"
#include "actors/serving/served_model.hpp"
#include "actors/serving/vocab_files.hpp"
#include "kernels/dlrm.hpp"

#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/mlp_reference.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <unordered_map>

namespace actorps {
namespace {

using json = nlohmann::json;
using test::run_actorps;

/// One generated set for every test here: 6,000 training lines, 500 test lines.
const std::string& data_dir() {
  static test::scratch_dir dir("actorps_ctr_export_data");
  static const bool made = [] {
    const auto gen = run_actorps("gen-data criteo --out " + dir.path
                                 + " --rows 6000 --test-rows 500 --seed 3");
    REQUIRE_MESSAGE(gen.status == 0, gen.output);
    return true;
  }();
  (void)made;
  return dir.path;
}

std::string train_file() { return data_dir() + "/train.tsv"; }
std::string test_file() { return data_dir() + "/test.tsv"; }

/// `model` trained for two epochs with --export-dir OUT and a checkpoint at the end.
struct trained {
  test::scratch_dir scratch{"actorps_ctr_export"};
  std::string exports = scratch.path + "/export", checkpoints = scratch.path + "/ckpt";
  std::string version = exports + "/1", metrics = scratch.path + "/metrics.jsonl";

  explicit trained(const std::string& model) {
    const auto run = run_actorps("simulate --no-progress --model " + model + " --dataset criteo:"
                                 + train_file() + " --test " + test_file()
                                 + " --epochs 2 --batch 128 --optimizer adam --lr 0.002 "
                                   "--checkpoint-dir " + checkpoints
                                 + " --checkpoint-every 1000 --export-dir " + exports
                                 + " --metrics " + metrics);
    REQUIRE_MESSAGE(run.status == 0, run.output);
    CHECK(run.output.find("exported to " + version) != std::string::npos);
  }

  json metadata() const { return json::parse(read_file_bytes(version + "/metadata.json")); }
};

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

/// What the run's final checkpoint holds, read without the export code: the dense parameters
/// (flat, model order) and every row of the first table by key (wdl, deepfm: and each wide
/// weight of the second).
struct checkpoint_state {
  train_spec spec;
  std::vector<double> dense;
  std::unordered_map<uint64_t, std::vector<double>> rows;
  std::unordered_map<uint64_t, double> wide;
  uint32_t dim = 0;
};

checkpoint_state read_checkpoint(const std::string& dir) {
  const auto ckpt = load_newest_checkpoint(dir);
  const auto run = decode_run_checkpoint(ckpt.run_bytes);
  REQUIRE(run);
  checkpoint_state out;
  out.spec = run->spec;
  const block_layout layout(out.spec);
  out.dense.assign(layout.total_floats(), std::nan(""));
  out.dim = out.spec.model.sparse_tables.at(0).config.dim;
  for (const auto& bytes : ckpt.shards) {
    const auto view = decode_shard_checkpoint(bytes);
    REQUIRE(view);
    for (const auto& b : view->blocks)
      std::copy_n(b.values, b.count, out.dense.begin() + layout.blocks()[b.id].offset);
    const auto& t = view->sparse.at(0);
    for (std::size_t i = 0; i < t.keys.size(); ++i)
      out.rows[t.keys[i]] = {t.values.begin() + i * out.dim, t.values.begin() + (i + 1) * out.dim};
    if (view->sparse.size() > 1)
      for (std::size_t i = 0; i < view->sparse[1].keys.size(); ++i)
        out.wide[view->sparse[1].keys[i]] = view->sparse[1].values[i];
  }
  return out;
}

/// wdl's and deepfm's logit in double: Σ w_f + a·dense + deep(concat(e, dense)) + (deepfm)
/// Σ_{i<j} e_i·e_j, written from kernels/wide_deep.hpp's formula.
double reference_wide_deep_logit(const checkpoint_state& s, const ctr_model& model,
                                 const std::vector<std::vector<double>>& e, const float* dense,
                                 const uint64_t* keys) {
  const auto shape = model.wide_deep_sizes();
  double z = 0;
  for (int f = 0; f < shape.fields; ++f) {
    const auto at = s.wide.find(keys[f]);
    if (at != s.wide.end()) z += at->second;
  }
  for (int j = 0; j < shape.dense_in; ++j) z += s.dense[j] * dense[j];  // linear/kernel
  std::vector<float> deep_in;
  for (const auto& row : e) deep_in.insert(deep_in.end(), row.begin(), row.end());
  deep_in.insert(deep_in.end(), dense, dense + shape.dense_in);
  const std::vector<double> deep(s.dense.begin() + shape.dense_in, s.dense.end());
  z += test::reference_logits(shape.deep_layers(), deep, deep_in.data(), [](double) {}).at(0);
  if (shape.fm)
    for (std::size_t i = 0; i < e.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        for (uint32_t d = 0; d < s.dim; ++d) z += e[i][d] * e[j][d];
  return z;
}

/// p(click) of one line in double, from the checkpoint: a key without a row reads zeros.
double reference_probability(const checkpoint_state& s, const ctr_model& model,
                             const float* dense, const uint64_t* keys) {
  const auto& shape = model.shape;
  std::vector<std::vector<double>> e;
  for (int f = 0; f < shape.fields; ++f) {
    const auto at = s.rows.find(keys[f]);
    e.push_back(at == s.rows.end() ? std::vector<double>(s.dim, 0.0) : at->second);
  }
  double z = 0;
  if (model.has_wide()) {
    z = reference_wide_deep_logit(s, model, e, dense, keys);
  } else if (model.kind == ctr_kind::lr) {  // dense/kernel [13], bias
    z = s.dense[13];
    for (int j = 0; j < 13; ++j) z += s.dense[j] * dense[j];
    for (const auto& w : e) z += w[0];
  } else {
    auto x0 = test::reference_logits(shape.bottom_layers(), s.dense, dense, [](double) {});
    for (auto& v : x0) v = std::max(v, 0.0);  // the bottom MLP's last layer has a ReLU too
    std::vector<const std::vector<double>*> v{&x0};
    for (const auto& row : e) v.push_back(&row);
    std::vector<float> top_in(x0.begin(), x0.end());
    for (std::size_t i = 1; i < v.size(); ++i)  // pairs (1,0), (2,0), (2,1), (3,0), ...
      for (std::size_t j = 0; j < i; ++j) {
        double dot = 0;
        for (uint32_t d = 0; d < s.dim; ++d) dot += (*v[i])[d] * (*v[j])[d];
        top_in.push_back(static_cast<float>(dot));
      }
    std::size_t bottom_params = 0;
    const auto b = shape.bottom_layers();
    for (std::size_t l = 0; l + 1 < b.size(); ++l)
      bottom_params += std::size_t(b[l]) * b[l + 1] + b[l + 1];
    const std::vector<double> top(s.dense.begin() + static_cast<std::ptrdiff_t>(bottom_params),
                                  s.dense.end());
    z = test::reference_logits(shape.top_layers(), top, top_in.data(), [](double) {}).at(0);
  }
  return 1.0 / (1.0 + std::exp(-z));
}

criteo_batch read_all(const std::string& path) {
  criteo_reader reader(path);
  criteo_batch all, batch;
  while (reader.next_batch(4096, batch) > 0) {
    all.labels.insert(all.labels.end(), batch.labels.begin(), batch.labels.end());
    all.dense.insert(all.dense.end(), batch.dense.begin(), batch.dense.end());
    all.keys.insert(all.keys.end(), batch.keys.begin(), batch.keys.end());
  }
  return all;
}

/// Everything a user can check of one trained CTR model's export.
void check_export(const std::string& model_flag, ctr_kind kind) {
  const trained t(model_flag);
  namespace fs = std::filesystem;
  for (const char* file : {"model.capnp", "model.onnx", "metadata.json", "vocab/C1.tsv",
                           "vocab/C26.tsv"})
    CHECK(fs::is_regular_file(t.version + "/" + file));
  CHECK_FALSE(fs::exists(t.version + "/vocab/C27.tsv"));

  // model.capnp: a CTR model whose re-encoding is the file byte for byte
  const auto bytes = read_file_bytes(t.version + "/model.capnp");
  auto served = decode_served_model(bytes, "model.capnp");
  REQUIRE(std::holds_alternative<ctr_model>(served));
  const auto& model = std::get<ctr_model>(served);
  CHECK(model.kind == kind);
  CHECK(encode_ctr_model(model) == bytes);
  REQUIRE(model.fields.size() == 26);
  REQUIRE(model.wide.size() == (model.has_wide() ? 26u : 0u));

  // the checkpoint's rows and model.capnp's are the same, field by field
  const auto state = read_checkpoint(t.checkpoints);
  std::size_t rows = 0, wide_rows = 0;
  for (std::size_t f = 0; f < 26; ++f) {
    const auto& field = model.fields[f];
    rows += field.keys.size();
    // vocab/C<f>.tsv lists exactly the field's keys (wdl, deepfm: of both tables), in row order
    auto keys = field.keys;
    if (model.has_wide()) {
      const auto& wide = model.wide[f];
      wide_rows += wide.keys.size();
      CHECK(wide.rows.at(0) == 0.0f);
      for (std::size_t i = 0; i < wide.keys.size(); ++i)
        CHECK(wide.rows[i + 1] == float(state.wide.at(wide.keys[i])));
      keys.insert(keys.end(), wide.keys.begin(), wide.keys.end());
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    }
    CHECK(parse_vocab_file(read_file_bytes(t.version + "/" + vocab_file_name(f)), "vocab")
          == keys);
    CHECK(std::all_of(field.rows.begin(), field.rows.begin() + state.dim,
                      [](float v) { return v == 0.0f; }));  // row 0: the unknown key's
    for (std::size_t i = 0; i < field.keys.size(); i += 97) {
      CAPTURE(f);
      CHECK(criteo_field_of(field.keys[i]) == int(f));
      CHECK(field.row_of(field.keys[i]) == i + 1);
      const auto& want = state.rows.at(field.keys[i]);
      for (uint32_t d = 0; d < state.dim; ++d)
        CHECK(field.rows[(i + 1) * state.dim + d] == float(want[d]));
    }
  }
  CHECK(rows == state.rows.size());
  CHECK(wide_rows == state.wide.size());
  CHECK(rows > 0);

  // metadata.json: the model string, the layout, the test AUC and logloss
  const auto meta = t.metadata();
  CHECK(meta["format_version"] == 2);
  CHECK(meta["model_string"] == state.spec.model.name);
  CHECK(meta["layout"]["name"] == "criteo");
  CHECK(meta["layout"]["categorical"]["fields"].size() == 26);
  CHECK(meta["model"]["table"]["rows"] == rows);
  const double auc = meta["test_auc"], logloss = meta["test_logloss"];
  CHECK(auc > 0.6);  // it learned something
  // the run's own evaluation of its final parameters gave the same figures
  const auto evals = test::metrics_events(t.metrics, "eval");
  REQUIRE(!evals.empty());
  CAPTURE(evals.back().dump());
  CHECK(std::abs(evals.back()["test_auc"].get<double>() - auc) < 1e-6);
  CHECK(std::abs(evals.back()["test_logloss"].get<double>() - logloss) < 1e-6);
  CHECK(meta["evaluation"]["rows"] == 500);

  // predict: the checkpoint's parameters, computed here, give the same probabilities
  const auto predicted = run_actorps("predict --model " + t.version + " --input " + test_file());
  REQUIRE_MESSAGE(predicted.status == 0, predicted.output);
  const auto lines = json_lines(predicted.output);
  const auto test = read_all(test_file());
  REQUIRE(lines.size() == test.rows());
  double max_diff = 0;
  for (std::size_t r = 0; r < test.rows(); ++r) {
    CHECK(lines[r]["index"] == r);
    const double ref = reference_probability(state, model, test.dense.data() + r * 13,
                                             test.keys.data() + r * 26);
    max_diff = std::max(max_diff, std::fabs(lines[r]["probability"].get<double>() - ref));
  }
  INFO("max difference from the reference: ", max_diff);
  CHECK(max_diff < 1e-5);

  // the same lines gzip-compressed: the same output
  const auto gz = t.scratch.path + "/test.tsv.gz";
  REQUIRE(test::run_command("sh -c 'gzip -c " + test_file() + " > " + gz + "'").status == 0);
  CHECK(run_actorps("predict --model " + t.version + " --input " + gz).output == predicted.output);

  // evaluate reproduces metadata.json
  const auto evaluated = run_actorps("evaluate --model " + t.version + " --test " + test_file()
                                     + " --json");
  REQUIRE_MESSAGE(evaluated.status == 0, evaluated.output);
  const auto e = json::parse(evaluated.output);
  CHECK(e["auc"].get<double>() == auc);
  CHECK(e["logloss"].get<double>() == logloss);
  CHECK(e["rows"] == 500);

  // export from the final checkpoint: the same model.capnp and model.onnx as --export-dir's
  const auto again = run_actorps("export --checkpoint " + t.checkpoints + " --export-dir "
                                 + t.exports + " --test " + test_file());
  REQUIRE_MESSAGE(again.status == 0, again.output);
  CHECK(read_file_bytes(t.exports + "/2/model.capnp") == bytes);
  CHECK(read_file_bytes(t.exports + "/2/model.onnx") == read_file_bytes(t.version + "/model.onnx"));
  CHECK(json::parse(read_file_bytes(t.exports + "/2/metadata.json"))["test_auc"] == auc);
}

} // namespace

TEST_CASE("ctr export: lr trained, served by predict and evaluate, again from its checkpoint") {
  check_export("lr", ctr_kind::lr);
}

TEST_CASE("ctr export: dlrm trained, served by predict and evaluate, again from its checkpoint") {
  check_export("dlrm:8:16-8:16", ctr_kind::dlrm);
}

TEST_CASE("ctr export: wdl trained, served by predict and evaluate, again from its checkpoint") {
  check_export("wdl:8:16-8", ctr_kind::wdl);
}

TEST_CASE("ctr export: deepfm trained, served by predict and evaluate, again from its checkpoint") {
  check_export("deepfm:8:16-8", ctr_kind::deepfm);
}

TEST_CASE("ctr serving refuses lines of another layout and flags of another model kind") {
  const trained t("lr");
  const test::scratch_dir scratch("actorps_ctr_refused");
  // 39 fields: the label dropped
  REQUIRE(test::run_command("sh -c \"cut -f2- " + test_file() + " > " + scratch.path
                            + "/unlabelled.tsv\"").status == 0);
  auto got = run_actorps("predict --model " + t.version + " --input " + scratch.path
                         + "/unlabelled.tsv");
  CHECK(got.status == 2);
  CHECK(got.output.find("not in the model's input layout") != std::string::npos);
  CHECK(got.output.find("unlabelled.tsv:1: 39 fields, expected 40") != std::string::npos);
  CHECK(got.output.find("\"index\"") == std::string::npos);  // nothing scored before it

  // an image file is no Criteo file either
  got = run_actorps("predict --model " + t.version + " --input " + t.version + "/model.capnp");
  CHECK(got.status == 2);
  CHECK(got.output.find("not in the model's input layout") != std::string::npos);

  got = run_actorps("predict --model " + t.version + " --input " + test_file() + " --top 2");
  CHECK(got.status == 2);
  CHECK(got.output.find("--top and --format are for classifiers") != std::string::npos);

  got = run_actorps("evaluate --model " + t.version);
  CHECK(got.status == 2);
  CHECK(got.output.find("--test FILE is required for a CTR model") != std::string::npos);

  got = run_actorps("export --checkpoint " + t.checkpoints + " --export-dir " + scratch.path
                    + "/out");
  CHECK(got.status == 2);
  CHECK(got.output.find("--test FILE is required for a CTR model") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(scratch.path + "/out/1"));

  // a model without a network actorps serves exports its tensors and rows (format 3), which
  // predict then refuses, saying what the version holds
  REQUIRE(run_actorps("gen-data libsvm --out " + scratch.path + " --rows 500 --test-rows 50").status
          == 0);
  got = run_actorps("simulate --no-progress --model sparse-lr --dataset libsvm:" + scratch.path
                    + "/train.libsvm --test " + scratch.path + "/test.libsvm --export-dir "
                    + scratch.path + "/sparse");
  REQUIRE(got.status == 0);
  CHECK(got.output.find("tensors and rows, for the program that trained it") != std::string::npos);
  CHECK(std::filesystem::exists(scratch.path + "/sparse/1/model.capnp"));
  CHECK_FALSE(std::filesystem::exists(scratch.path + "/sparse/1/model.onnx"));
  got = run_actorps("predict --model " + scratch.path + "/sparse/1 --input " + scratch.path
                    + "/test.libsvm");
  CHECK(got.status == 2);
  CHECK(got.output.find("is exported as its tensors and rows only (format 3)") != std::string::npos);
  got = run_actorps("simulate --no-progress --model sparse-lr --dataset libsvm:" + scratch.path
                    + "/train.libsvm --test " + scratch.path + "/test.libsvm --export-dir "
                    + scratch.path + "/versions --export-every 4");
  CHECK(got.status == 2);
  CHECK(got.output.find("export versions while training are for MLPs and CTR models")
        != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(scratch.path + "/versions"));
}

} // namespace actorps
