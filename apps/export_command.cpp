#include "apps/export_command.hpp"

#include "actors/storage/checkpoint_signing.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "actors/protocol/errors.hpp"
#include "apps/command_line.hpp"
#include "actors/serving/export_after_run.hpp"
#include "apps/test_split_flags.hpp"
#include "apps/training_flags.hpp"
#include "actors/serving/export_chain.hpp"
#include "actors/serving/export_metadata.hpp"
#include "actors/serving/model_export.hpp"
#include "actors/serving/versioned_dir.hpp"
#include "actors/data/load_split.hpp"
#include "actors/model/mlp_plugin.hpp"
#include "actors/serving/ctr_model.hpp"
#include "kernels/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace po = boost::program_options;

namespace actorps {

namespace {

struct export_flags {
  std::string checkpoint, export_dir, checkpoint_key, consolidate;
  test_split_flags data;
};

po::options_description export_options(export_flags& f) {
  po::options_description desc("actorps export flags");
  desc.add_options()
    ("help,h", "print this help")
    ("checkpoint", po::value(&f.checkpoint),
     "a ckpt-* directory, or a directory holding them (the newest valid one is exported; "
     "a corrupt newer one is reported and skipped)")
    ("checkpoint-key", po::value(&f.checkpoint_key),
     "the key the checkpoints were signed with (the run's --checkpoint-key): needed for a "
     "signed checkpoint; with it, an unsigned one is refused")
    ("export-dir", po::value(&f.export_dir),
     "write the model to OUT/<version>/ (model.capnp, model.onnx, metadata.json; version = "
     "the largest existing + 1, never overwritten)")
    ("consolidate", po::value(&f.consolidate),
     "fold the newest complete chain of the export directory DIR (or the chain ending at the "
     "version DIR/<v>) into one new full version of DIR, or of --export-dir when given");
  add_test_split_options(desc, f.data);
  return desc;
}

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
std::shared_ptr<const dataset> checkpoint_test_split(const export_flags& f,
                                                     const train_spec& spec) {
  if (ctr_kind_of(spec.model)) return load_split(criteo_test_source(f.data), false);
  const auto layers = mlp_layers(spec.model);
  return load_split(test_split_source(f.data, layers ? layers->front() : 784), false);
}

int export_checkpoint(const export_flags& f) {
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
  return 0;
}

int consolidate_export(const export_flags& f) {
  std::string out = f.export_dir;
  if (out.empty()) {  // the chain's own export directory: DIR, or DIR/<v>'s parent
    const auto p = std::filesystem::path(f.consolidate).lexically_normal();
    const bool version = std::filesystem::exists(f.consolidate + "/" + metadata_json_name);
    const auto dir = p.has_filename() ? p : p.parent_path();
    out = version ? (dir.parent_path().empty() ? "." : dir.parent_path().string()) : dir.string();
  }
  std::vector<std::string> skipped;
  export_result done;
  try {
    done = consolidate_chain(f.consolidate, out, &skipped);
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
  return 0;
}

} // namespace

int export_command(const std::vector<std::string>& args) {
  export_flags f;
  const std::string usage =
    "usage: actorps export --checkpoint DIR --export-dir OUT [--dataset fashion-mnist|synthetic]\n"
    "       actorps export --checkpoint DIR --export-dir OUT --test FILE   (lr, dlrm)\n"
    "\nThe parameters of a saved checkpoint exported as OUT/<version>/, as `actorps simulate "
    "--export-dir OUT`\nwrites it at the end of a run; test accuracy and loss on the test split "
    "given by the data flags\n(for a synthetic run: the training's --synthetic-test-rows and "
    "--seed). Checkpoints do not record\nthe dataset: --dataset must be the training's, as it "
    "also sets the model's input scaling.\nA CTR model (lr, dlrm) is tested on the Criteo file "
    "--test (AUC and logloss) and its export\nholds every row of its table, with vocab/C1.tsv ... "
    "vocab/C26.tsv.\n\n"
    "       actorps export --consolidate DIR[/<v>] [--export-dir OUT]\n"
    "\nFolds a chain of export versions (a full one and its deltas, written by --export-every) "
    "into one\nnew full version, as a full export at that clock holds it.\n\n";
  return run_command_line("export", args, export_options(f), usage, [&] {
    if (!f.consolidate.empty()) {
      if (!f.checkpoint.empty())
        throw std::invalid_argument("--consolidate and --checkpoint: give one");
      return consolidate_export(f);
    }
    if (f.checkpoint.empty()) throw std::invalid_argument("--checkpoint DIR is required");
    if (f.export_dir.empty()) throw std::invalid_argument("--export-dir OUT is required");
    return export_checkpoint(f);
  });
}

} // namespace actorps
