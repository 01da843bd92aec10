// What a trainer reads its minibatches from: one worker's shard of the training data. The
// in-memory datasets give a data_shard (dataset.hpp); a streaming reader gives its own.
#pragma once

#include <cstdint>

namespace actorps {

class batch_source {
public:
  virtual ~batch_source() = default;

  virtual int batch_size() const = 0;          ///< rows per minibatch
  virtual int cols() const = 0;                ///< features per row
  virtual int64_t steps_per_epoch() const = 0; ///< minibatches in one pass over the shard

  /// Fills x (batch × cols, row-major) and y (batch) with the minibatch of global step `step`
  /// (0-based; epoch = step / steps_per_epoch()). The same step gives the same rows anywhere.
  virtual void fill_batch(int64_t step, float* x, int32_t* y) const = 0;
};

} // namespace actorps
