#include "apps/export_command.hpp"

#include "actors/ps/checkpoint_export.hpp"
#include "apps/command_line.hpp"
#include "apps/test_split_flags.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace po = boost::program_options;

namespace actorps {

namespace {

struct export_flags : checkpoint_export_options {
  std::string consolidate;  ///< --consolidate DIR[/<v>]
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

} // namespace

int export_command(const std::vector<std::string>& args) {
  export_flags f;
  const std::string usage =
    "usage: actorps export --checkpoint DIR --export-dir OUT [--dataset fashion-mnist|synthetic]\n"
    "       actorps export --checkpoint DIR --export-dir OUT --test FILE   (a CTR model)\n"
    "\nThe parameters of a saved checkpoint exported as OUT/<version>/, as `actorps simulate "
    "--export-dir OUT`\nwrites it at the end of a run; test accuracy and loss on the test split "
    "given by the data flags\n(for a synthetic run: the training's --synthetic-test-rows and "
    "--seed). Checkpoints do not record\nthe dataset: --dataset must be the training's, as it "
    "also sets the model's input scaling.\nA CTR model (lr, dlrm, wdl, deepfm) is tested on the "
    "Criteo file --test (AUC and logloss)\nand its export holds every row of its tables, with "
    "vocab/C1.tsv ... vocab/C26.tsv.\n\n"
    "       actorps export --consolidate DIR[/<v>] [--export-dir OUT]\n"
    "\nFolds a chain of export versions (a full one and its deltas, written by --export-every) "
    "into one\nnew full version, as a full export at that clock holds it.\n\n";
  return run_command_line("export", args, export_options(f), usage, [&] {
    if (!f.consolidate.empty()) {
      if (!f.checkpoint.empty())
        throw std::invalid_argument("--consolidate and --checkpoint: give one");
      consolidate_export_dir(f.consolidate, f.export_dir);
      return 0;
    }
    if (f.checkpoint.empty()) throw std::invalid_argument("--checkpoint DIR is required");
    if (f.export_dir.empty()) throw std::invalid_argument("--export-dir OUT is required");
    export_checkpoint(f);
    return 0;
  });
}

} // namespace actorps
