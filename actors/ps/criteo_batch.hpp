// A minibatch of CTR rows: what criteo_reader (Criteo's layout) or schema_reader (a log a
// feature schema describes) hands a worker for a CTR model (embeddings of the categorical
// keys, an MLP over the dense features).
#pragma once

#include "actors/ps/criteo_keys.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace actorps {

/// Row r holds labels[r] (0 or 1), dense_width dense values dense[r·W .. r·W+W−1] and `fields`
/// key fields. Criteo's layout: W = 13 transformed integer features (criteo_dense_value;
/// missing: 0) and 26 fields C1..C26, one key each (criteo_key).
///
/// Keys: with `offsets` empty every field of every row holds exactly one key, keys[r·F + f]
/// (F = fields). A schema with a multi-hot field fills `offsets` (rows·F + 1 entries): field f
/// of row r holds keys[offsets[r·F + f] .. offsets[r·F + f + 1]), possibly none. A key is
/// (table << 56) | the value's hash either way (actors/ps/criteo_keys.hpp).
struct criteo_batch {
  std::vector<float> labels = {};   ///< rows
  std::vector<float> weights = {};  ///< rows, or empty: every row weighs 1
  std::vector<float> dense = {};    ///< rows × dense_width, row-major
  std::vector<uint64_t> keys = {};  ///< see above
  std::vector<uint32_t> offsets = {};  ///< empty, or rows × fields + 1 (offsets[0] = 0)
  std::vector<uint8_t> mean_fields = {};  ///< with offsets: per field, 1 where its bag pools by
                                          ///< the mean (the schema's pooling), 0 by the sum
  int dense_width = criteo_dense_fields;
  int fields = criteo_categorical_fields;

  size_t rows() const { return labels.size(); }

  /// No rows, capacity kept for the next batch.
  void clear() {
    labels.clear();
    weights.clear();
    dense.clear();
    keys.clear();
    offsets.clear();
  }

  /// Appends the rows of `more` (same widths and fields, both with or both without offsets, as
  /// one reader gives them; an empty batch takes `more`'s).
  void append(const criteo_batch& more) {
    const bool bags = !more.offsets.empty();
    if (rows() == 0) {
      dense_width = more.dense_width;
      fields = more.fields;
      mean_fields = more.mean_fields;
    }
    labels.insert(labels.end(), more.labels.begin(), more.labels.end());
    weights.insert(weights.end(), more.weights.begin(), more.weights.end());
    dense.insert(dense.end(), more.dense.begin(), more.dense.end());
    const auto base = static_cast<uint32_t>(keys.size());
    keys.insert(keys.end(), more.keys.begin(), more.keys.end());
    if (bags) {
      if (offsets.empty()) offsets.push_back(0);
      for (std::size_t i = 1; i < more.offsets.size(); ++i)
        offsets.push_back(base + more.offsets[i]);
    }
  }
};

} // namespace actorps
