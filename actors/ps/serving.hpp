// Serving an exported model from a program: the model of an export directory's newest complete
// chain (or of one version of it), its scores on a test split, an MLP's class probabilities for
// a batch, and a chain folded into one full version: what `actorps evaluate`, `actorps predict`
// and `actorps export --consolidate` do (the directory's format: actors/serving/EXPORT_FORMAT.md).
//
//   actorps::export_model model("/tmp/fmnist");  // the newest version there
//   auto scores = model.evaluate(test_source);    // scores.accuracy, scores.loss, ...
#pragma once

#include "actors/ps.hpp"  // data_source

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

/// How an exported model does on a labelled test split (export_model::evaluate): the figures
/// metadata.json records for the exported parameters.
struct export_scores {
  int64_t rows = 0;
  int64_t correct = 0;   ///< rows whose predicted class is the label (CTR: at p >= 0.5)
  double accuracy = 0;   ///< correct / rows
  double loss = 0;       ///< mean -ln p(label) (CTR: the mean log loss)
  double auc = -1;       ///< CTR models: ROC AUC; -1 for classifiers
  int classes = 0;       ///< classifiers: the confusion matrix's side
  std::vector<int64_t> confusion;  ///< classes x classes: [true label][predicted class]
};

/// An exported model, loaded for serving: an MLP (classes of rows of floats) or a CTR model
/// (lr, dlrm, wdl, deepfm: clicks of Criteo rows).
class export_model {
public:
  /// The model at `path` as `actorps predict` and `actorps evaluate` load it: a version
  /// DIR/<v> (model.capnp's SHA-256 the one metadata.json records), or an export directory,
  /// whose newest complete chain is folded (each version skipped is said on stderr); every
  /// parameter within `max_parameter` (--max-parameter). Throws std::runtime_error naming what
  /// is missing or wrong (the file, or the link of a chain).
  explicit export_model(const std::string& path, float max_parameter = 1e6f);

  bool ctr() const;                ///< a CTR model (lr, dlrm, wdl, deepfm) rather than an MLP
  std::string name() const;        ///< a CTR model's model string ("dlrm:8:16:16"); "" an MLP
  std::size_t parameters() const;  ///< an MLP's parameters (0: a CTR model)
  int input_width() const;         ///< an MLP's floats per input row (0: a CTR model)

  /// The scores on `test`'s test split, on the CPU: an MLP's accuracy, loss and confusion
  /// matrix (its split of fashion-mnist, synthetic or csv), a CTR model's AUC, log loss and
  /// accuracy (Criteo's test_path). Throws std::exception saying why the split cannot be read
  /// or does not fit the model.
  export_scores evaluate(const data_source& test) const;

  /// An MLP's class probabilities of `rows` rows of input_width() floats, already divided by
  /// the export's input divisor, on the CPU: rows x classes. Throws std::invalid_argument for
  /// a CTR model.
  std::vector<float> predict(const float* x, std::size_t rows) const;

private:
  struct impl;
  std::shared_ptr<const impl> impl_;
};

/// A model trained by a program of its own (actorps.torch.train; export format 3): each dense
/// tensor by name and shape, every row of each sparse table. actorps knows no network for it
/// (export_model refuses it, saying so): the program that trained it loads these and serves.
struct program_export {
  struct tensor {
    std::string name;
    std::vector<uint32_t> shape;
    std::vector<float> values;  ///< row-major, the product of shape
  };
  struct table {
    std::string name;
    uint32_t dim = 0;
    std::vector<uint64_t> keys;  ///< strictly ascending
    std::vector<float> values;   ///< keys x dim, in key order
  };
  std::string name;  ///< the model's name (its spec's)
  std::vector<tensor> tensors;
  std::vector<table> tables;
};

/// The program's model at `path`: a version DIR/<v>, or an export directory's newest version,
/// model.capnp checked against metadata.json's SHA-256. Throws std::runtime_error naming what
/// is missing or wrong (another format included).
program_export read_program_export(const std::string& path);

/// Folds the newest complete chain at `path` (an export directory, or the delta version it
/// ends at) into one new full version of the export directory `out`, as `actorps export
/// --consolidate` does; returns the new version's directory. Throws std::runtime_error naming
/// a missing or foreign link, std::invalid_argument when the chain is one full version already.
std::string consolidate_export(const std::string& path, const std::string& out);

} // namespace actorps
