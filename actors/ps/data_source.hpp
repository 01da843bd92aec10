// Where a role gets its data, as a value that can travel: the chief sends it to worker and
// evaluator processes, which load their own copy (every host has Debian's Fashion-MNIST).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace actorps {

inline constexpr const char* default_fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

struct data_source {
  enum class kind { fashion_mnist, synthetic, csv, libsvm, criteo, logs };
  kind what = kind::fashion_mnist;
  std::string dir = default_fashion_mnist_dir;
  int train_rows = 8192;   ///< synthetic only
  int test_rows = 2048;    ///< synthetic only
  uint64_t seed = 1;       ///< synthetic only
  int cols = 784;          ///< synthetic only: features (the model's input width)
  std::string train_path;  ///< csv (label in column 1), libsvm, criteo: the training file or
                           ///< directory (plain or gzip), which each worker streams its part of
  std::string test_path;   ///< csv, libsvm, criteo: the test file
  int group_field = -1;    ///< criteo: the categorical field (0 for C1 .. 25 for C26), logs:
                           ///< the schema's key field, whose value groups the test rows for
                           ///< GAUC (--gauc-group); -1: none
  int slice_field = -1;    ///< the same kind of field, whose value cuts the test rows into
                           ///< slices for per-slice AUC (--slice-auc); -1: none
  bool follow = false;     ///< libsvm, criteo, logs, csv: train_path is a directory followed as
                           ///< it grows (--follow)
  std::string schema_path; ///< logs: the feature schema (--schema)
  char delimiter = '\t';   ///< logs: '\t' (tsv:PATH) or ',' (csv:PATH with --schema)
};

/// The clocks of a followed stream without --steps: more than any run trains, so it goes on
/// until it is stopped (the stop file, a signal).
inline constexpr int64_t endless_clocks = int64_t(1) << 40;

/// Whether each worker streams its own part of the training file (libsvm, criteo, logs)
/// instead of being handed rows in memory.
inline bool streamed(data_source::kind what) {
  return what == data_source::kind::libsvm || what == data_source::kind::criteo
         || what == data_source::kind::logs;
}

/// Whether each worker reads its part of each training file as a stream (a directory of files
/// read as one, which --follow may follow): the streamed kinds, and csv, whose rows a dense
/// model takes from the worker's own reader (csv_batches).
inline bool read_in_parts(data_source::kind what) {
  return streamed(what) || what == data_source::kind::csv;
}

} // namespace actorps
