// One worker's minibatches of a CSV stream, by step, as a dense model reads them: its part of
// each file of the training path (csv_reader), in whole batches (clocked_batches), so that the
// files are never held in memory and the same step gives the same rows after a resume.
#pragma once

#include "actors/data/clocked_batches.hpp"
#include "actors/data/csv_dataset.hpp"
#include "actors/ps/batch_source.hpp"
#include "actors/ps/data_source.hpp"

namespace actorps {

// Compiled once, in csv_batches.cpp, rather than in every file that uses it.
extern template class clocked_batches<csv_reader, dense_batch>;

/// Step s is batch (s mod B) of part `worker` of `workers` of src.train_path, B the part's whole
/// batches (a short last one is dropped, as data_shard drops it); rows in file order, no shuffle
/// (as libsvm and criteo streams). src.follow: no epochs, the stream goes on into files that
/// appear later. Labels must be below `classes`. Not thread-safe: one per worker.
class csv_batches : public batch_source {
public:
  /// Reads step 0's batch (unless following). Throws std::invalid_argument for a bad part or
  /// batch, dataset_error for a missing or malformed file, a part without a whole batch, or
  /// files whose columns are not `cols`.
  csv_batches(const data_source& src, int worker, int workers, int batch, int cols, int classes);

  int batch_size() const override { return batch_; }
  int cols() const override { return cols_; }
  /// B, once the part's end has been read; 0 before (and while following).
  int64_t steps_per_epoch() const override { return batches_.batches_per_epoch(); }

  /// Throws dataset_error naming file, line and column of a bad line.
  void fill_batch(int64_t step, float* x, int32_t* y) const override;

private:
  std::string path_;
  int batch_, cols_;
  mutable clocked_batches<csv_reader, dense_batch> batches_;
};

} // namespace actorps
