// A minibatch of sparse rows in compressed-sparse-row form: what a libsvm reader hands a worker
// for a model over hashed features.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace actorps {

/// Row r holds labels[r] and the pairs (keys[i], values[i]) for i in [offsets[r], offsets[r+1]).
/// Keys are feature indices as the file wrote them, in the file's order; a key written twice in
/// a row stays twice (a linear model then sums them).
struct sparse_batch {
  std::vector<float> labels;      ///< rows; 0 or 1
  std::vector<uint64_t> offsets;  ///< rows + 1; offsets[0] == 0
  std::vector<uint64_t> keys;     ///< offsets.back()
  std::vector<float> values;      ///< offsets.back()

  size_t rows() const { return labels.size(); }
  size_t nonzeros() const { return keys.size(); }

  /// No rows, capacity kept for the next batch.
  void clear() {
    labels.clear();
    offsets.assign(1, 0);
    keys.clear();
    values.clear();
  }
};

} // namespace actorps
