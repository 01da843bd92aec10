// A minibatch of Criteo rows: what criteo_reader hands a worker for a CTR model (embeddings of
// the categorical keys, an MLP over the dense features).
#pragma once

#include "actors/data/criteo_keys.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace actorps {

/// Row r holds labels[r] (0 or 1), the 13 transformed integer features
/// dense[r·13 .. r·13+12] (criteo_dense_value; missing: 0) and the 26 keys
/// keys[r·26 .. r·26+25] (criteo_key of C1..C26, in field order: keys[r·26 + f] has field f).
struct criteo_batch {
  std::vector<float> labels = {};   ///< rows
  std::vector<float> dense = {};    ///< rows × criteo_dense_fields, row-major
  std::vector<uint64_t> keys = {};  ///< rows × criteo_categorical_fields, row-major

  size_t rows() const { return labels.size(); }

  /// No rows, capacity kept for the next batch.
  void clear() {
    labels.clear();
    dense.clear();
    keys.clear();
  }
};

} // namespace actorps
