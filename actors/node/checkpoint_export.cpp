#include "actors/ps/checkpoint_export.hpp"

#include "actors/data/load_split.hpp"
#include "actors/model/mlp_plugin.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/serving/ctr_model.hpp"
#include "actors/serving/export_after_run.hpp"
#include "actors/serving/export_chain.hpp"
#include "actors/serving/export_metadata.hpp"
#include "actors/serving/model_export.hpp"
#include "actors/serving/versioned_dir.hpp"
#include "actors/storage/checkpoint_signing.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/value_bounds.hpp"

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace actorps {

namespace {

/// The newest valid checkpoint at `path`; each newer invalid one is said on stderr.
loaded_checkpoint newest_checkpoint(const std::string& path, const std::string& key_file) {
  std::string key;
  try {
    if (!key_file.empty()) key = read_checkpoint_key(key_file);
  } catch (const checkpoint_error& e) {
    throw std::invalid_argument(std::string("--checkpoint-key ") + e.what());
  }
  loaded_checkpoint ckpt;
  try {
    ckpt = load_newest_checkpoint(path, {}, default_max_parameter, key);
  } catch (const checkpoint_error& e) {
    throw std::invalid_argument(std::string("--checkpoint: ") + e.what());
  }
  for (const auto& why : ckpt.skipped) std::fprintf(stderr, "export: skipping %s\n", why.c_str());
  return ckpt;
}

/// The dense parameters and every sparse row of the checkpoint's shard files.
trained_parameters checkpoint_parameters(const loaded_checkpoint& ckpt, const train_spec& spec) {
  try {
    return shard_state_parameters(ckpt.shards, spec, ckpt.dir);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--checkpoint: ") + e.what());
  }
}

/// The test split of the checkpoint's model: a CTR model's from --test, an MLP's from the
/// other data flags.
std::shared_ptr<const dataset> checkpoint_test_split(const checkpoint_export_options& f,
                                                     const train_spec& spec) {
  if (ctr_kind_of(spec.model)) return load_split(criteo_test_source(f.data), false);
  const auto layers = mlp_layers(spec.model);
  return load_split(test_split_source(f.data, layers ? layers->front() : 784), false);
}

} // namespace

void export_checkpoint(const checkpoint_export_options& f) {
  const auto ckpt = newest_checkpoint(f.checkpoint, f.checkpoint_key);
  const auto run = decode_run_checkpoint(ckpt.run_bytes);
  if (!run)
    throw std::invalid_argument("--checkpoint: " + ckpt.dir + "/" + run_file_name + ": "
                                + describe(run.error()));
  if (schema_shaped(run->spec.model))
    throw std::invalid_argument("--checkpoint: the model " + run->spec.model.name + " reads a "
                                "log's schema, which a checkpoint does not hold; --export-dir on "
                                "the run exports it with its schema");
  const auto params = checkpoint_parameters(ckpt, run->spec);
  const auto test = checkpoint_test_split(f, run->spec);
  const bool ctr = ctr_kind_of(run->spec.model).has_value();
  run_info info;
  info.source = "checkpoint";
  info.dataset = ctr ? "criteo" : f.data.dataset;
  info.test_path = ctr ? f.data.test_path : "";
  info.batch = run->batch;
  info.clocks = ckpt.clock;
  info.samples = run->samples;
  info.wall_s = run->wall_s;
  info.backend = "unknown";  // checkpoints do not record what the workers computed on
  std::printf("export: %s (clock %lld, %lld samples)\n", ckpt.dir.c_str(),
              static_cast<long long>(ckpt.clock), static_cast<long long>(run->samples));
  export_result done;
  try {
    done = export_trained_model(run->spec, params, info, *test, f.export_dir);
  } catch (const versioned_dir_error& e) {
    throw std::invalid_argument(std::string("--export-dir cannot be written: ") + e.what());
  } catch (const std::invalid_argument& e) {  // the test split does not fit the model
    throw std::invalid_argument((ctr ? "--test " + f.data.test_path : "--dataset " + f.data.dataset)
                                + ": " + e.what());
  }
  print_export(done);
}

void consolidate_export_dir(const std::string& chain, const std::string& export_dir) {
  std::string out = export_dir;
  if (out.empty()) {  // the chain's own export directory: DIR, or DIR/<v>'s parent
    const auto p = std::filesystem::path(chain).lexically_normal();
    const bool version = std::filesystem::exists(chain + "/" + metadata_json_name);
    const auto dir = p.has_filename() ? p : p.parent_path();
    out = version ? (dir.parent_path().empty() ? "." : dir.parent_path().string()) : dir.string();
  }
  std::vector<std::string> skipped;
  export_result done;
  try {
    done = consolidate_chain(chain, out, &skipped);
  } catch (const export_chain_error& e) {
    throw std::invalid_argument(std::string("--consolidate: ") + e.what());
  } catch (const model_file_error& e) {
    throw std::invalid_argument(std::string("--consolidate: ") + e.what());
  } catch (const versioned_dir_error& e) {
    throw std::invalid_argument(std::string("--export-dir cannot be written: ") + e.what());
  }
  for (const auto& why : skipped) std::fprintf(stderr, "export: skipping %s\n", why.c_str());
  std::printf("  consolidated to %s in %.2f s (model.capnp %zu bytes, model.onnx %zu bytes, "
              "vocab/ %zu bytes, metadata.json)\n",
              done.path.c_str(), done.seconds, done.capnp_bytes, done.onnx_bytes,
              done.vocab_bytes);
}

} // namespace actorps
