// Training and test data: Fashion-MNIST from Debian's dataset-fashion-mnist package (gzip IDX),
// or a seeded synthetic 10-class problem for tests; and the per-worker shard with its
// deterministic minibatch order.
#pragma once

#include "actors/ps/batch_source.hpp"
#include "actors/ps/criteo_batch.hpp"
#include "actors/ps/data_source.hpp"
#include "actors/ps/data_split.hpp"
#include "actors/ps/sparse_batch.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorps {

/// Thrown for a missing, unreadable or malformed data file; what() names the file and the
/// problem (e.g. ".../train-images-idx3-ubyte.gz: bad magic 0x00000801, expected 0x00000803").
struct dataset_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Row-major samples: x holds rows × cols floats, y holds rows labels in [0, classes). A split of
/// sparse rows (libsvm) holds them in `sparse` instead (labels there), with cols 0 and classes 2;
/// a streamed training split holds only its row count (each worker reads its own part).
struct dataset {
  int rows = 0;
  int cols = 0;
  int classes = 0;
  std::vector<float> x;
  std::vector<int32_t> y;
  sparse_batch sparse;
  criteo_batch criteo;  ///< a Criteo test split (cols 0, classes 2), else empty
  /// A test split's rows by key field, for the metrics that cut them (binary models).
  struct key_groups {
    /// Each row's group for GAUC (data_source::group_field: the key of that field), else empty.
    std::vector<uint64_t> gauc;
    /// Each row's slice for per-slice AUC (data_source::slice_field), else empty.
    std::vector<uint64_t> slices;
  };
  key_groups groups;
};

/// What the uint8 pixels of Fashion-MNIST are divided by for training: inputs lie in [0, 1].
inline constexpr float pixel_divisor = 255.0f;

/// Loads the train (60 000) or test (10 000) split from `dir` ({train,t10k}-{images-idx3,
/// labels-idx1}-ubyte.gz, plain files without .gz also accepted). Pixels are scaled to [0, 1]
/// (value / pixel_divisor), images flattened to 784 columns. Validates magic numbers, counts,
/// image size, file lengths and label range; throws dataset_error otherwise.
dataset load_fashion_mnist(const std::string& dir, bool train);

/// The rows of that split, from its image file's header (the pixels are not read).
int64_t fashion_mnist_rows(const std::string& dir, bool train);

/// Loads the images of one IDX image file (magic 0x00000803, 28×28 uint8; gzip-compressed or
/// plain) as rows of 784 floats scaled like load_fashion_mnist; no labels (classes = 0).
/// Throws dataset_error naming the file and the problem.
dataset load_idx_images(const std::string& path);

/// A seeded, generated 10-class problem with `cols` features: class centroids drawn once from
/// `seed`, samples = centroid + Gaussian noise. Train and test share the centroids and use
/// disjoint noise streams. The centroids are orthogonal with radius 3.75 against unit noise, so
/// the best achievable accuracy is about 0.97: a small MLP gets above 0.9 in a few hundred
/// steps, with room left to see training progress.
dataset make_synthetic(int rows, int cols, uint64_t seed, bool train);

/// The contiguous slice of a training set that worker `worker` of `workers` trains on, with a
/// minibatch order that depends only on (seed, worker, epoch): the same inputs give the same
/// batches in any process. Each epoch visits the shard in a fresh permutation; the last partial
/// batch of an epoch is dropped, so every batch has exactly `batch` rows. Not thread-safe (it
/// caches the current epoch's permutation): one object per worker.
class data_shard : public batch_source {
public:
  data_shard(std::shared_ptr<const dataset> data, int worker, int workers, int batch,
             uint64_t seed);

  int64_t begin() const { return begin_; }     ///< first row of the shard in the dataset
  int64_t size() const { return size_; }       ///< rows in the shard
  /// The rows worker `worker` of `workers` gets out of `rows` (protocol/data_split.hpp).
  static int64_t rows_of(int64_t rows, int worker, int workers) {
    return rows_of_worker(rows, worker, workers);
  }

  int batch_size() const override { return batch_; }
  int cols() const override { return data_->cols; }
  int64_t steps_per_epoch() const override { return size_ / batch_; }

  /// Fills x (batch × cols) and y (batch) with the minibatch of global step `step` (0-based;
  /// epoch = step / steps_per_epoch()).
  void fill_batch(int64_t step, float* x, int32_t* y) const override;

  /// The dataset row indices of that minibatch (for tests and reproducibility checks).
  std::vector<int64_t> batch_rows(int64_t step) const;

private:
  const std::vector<int64_t>& permutation(int64_t epoch) const;

  std::shared_ptr<const dataset> data_;
  int worker_;
  int batch_;
  uint64_t seed_;
  int64_t begin_ = 0, size_ = 0;
  mutable int64_t cached_epoch_ = -1;
  mutable std::vector<int64_t> cached_perm_;
};

} // namespace actorps
