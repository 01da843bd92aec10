#include "actors/data/load_split.hpp"

#include "actors/data/criteo_reader.hpp"
#include "actors/data/csv_dataset.hpp"
#include "actors/data/libsvm_reader.hpp"

#include <algorithm>
#include <limits>

namespace actorps {

namespace {

/// The rows of a libsvm split: a test split whole (in `sparse`), a training split only counted
/// (its workers stream their parts).
dataset load_libsvm(const std::string& path, bool train) {
  dataset out;
  out.classes = 2;
  auto rows = int64_t{0};
  if (train) {
    rows = count_libsvm_rows(path);
  } else {
    libsvm_reader reader(path);
    sparse_batch batch;
    out.sparse.clear();
    while (reader.next_batch(1 << 16, batch) > 0) {
      auto base = out.sparse.keys.size();
      out.sparse.labels.insert(out.sparse.labels.end(), batch.labels.begin(), batch.labels.end());
      out.sparse.keys.insert(out.sparse.keys.end(), batch.keys.begin(), batch.keys.end());
      out.sparse.values.insert(out.sparse.values.end(), batch.values.begin(), batch.values.end());
      for (std::size_t r = 1; r < batch.offsets.size(); ++r)
        out.sparse.offsets.push_back(base + batch.offsets[r]);
    }
    rows = static_cast<int64_t>(out.sparse.rows());
  }
  if (rows > std::numeric_limits<int>::max())
    throw dataset_error(path + ": " + std::to_string(rows) + " rows, more than 2^31 - 1");
  out.rows = static_cast<int>(rows);
  return out;
}

/// The rows of a Criteo split: a test split whole (in `criteo`), a training split only counted.
dataset load_criteo(const std::string& path, bool train) {
  dataset out;
  out.classes = 2;
  auto rows = int64_t{0};
  if (train) {
    rows = count_criteo_rows(path);
  } else {
    criteo_reader reader(path);
    criteo_batch batch;
    auto& all = out.criteo;
    while (reader.next_batch(1 << 16, batch) > 0) {
      all.labels.insert(all.labels.end(), batch.labels.begin(), batch.labels.end());
      all.dense.insert(all.dense.end(), batch.dense.begin(), batch.dense.end());
      all.keys.insert(all.keys.end(), batch.keys.begin(), batch.keys.end());
    }
    rows = static_cast<int64_t>(all.rows());
  }
  if (rows > std::numeric_limits<int>::max())
    throw dataset_error(path + ": " + std::to_string(rows) + " rows, more than 2^31 - 1");
  out.rows = static_cast<int>(rows);
  return out;
}

/// Classes are the labels 0..max: a training file whose labels start above 0 (1..3, as
/// one-based labels are often written) would train a class no row has and report one class
/// too many, so it is refused, saying how to fix it.
void check_classes_from_zero(const dataset& d, const std::string& path) {
  if (d.y.empty()) return;
  const auto [low, high] = std::minmax_element(d.y.begin(), d.y.end());
  if (*low == 0) return;
  throw dataset_error(path + ": the labels run from " + std::to_string(*low) + " to "
                      + std::to_string(*high) + ", but classes are numbered from 0 and no row "
                        "has label 0 (subtract " + std::to_string(*low)
                      + " from every label)");
}

} // namespace

std::shared_ptr<const dataset> load_split(const data_source& src, bool train) {
  if (src.what == data_source::kind::criteo)
    return std::make_shared<dataset>(load_criteo(train ? src.train_path : src.test_path, train));
  if (src.what == data_source::kind::libsvm)
    return std::make_shared<dataset>(load_libsvm(train ? src.train_path : src.test_path, train));
  if (src.what == data_source::kind::fashion_mnist)
    return std::make_shared<dataset>(load_fashion_mnist(src.dir, train));
  if (src.what == data_source::kind::csv) {
    auto d = load_csv(train ? src.train_path : src.test_path);
    if (train) check_classes_from_zero(d, src.train_path);
    return std::make_shared<dataset>(std::move(d));
  }
  return std::make_shared<dataset>(
    make_synthetic(train ? src.train_rows : src.test_rows, src.cols, src.seed, train));
}

int64_t training_rows(const data_source& src) {
  switch (src.what) {
    case data_source::kind::fashion_mnist: return fashion_mnist_rows(src.dir, true);
    case data_source::kind::synthetic: return src.train_rows;
    case data_source::kind::csv: return load_csv(src.train_path).rows;  // a full parse, for now
    case data_source::kind::libsvm: return count_libsvm_rows(src.train_path);
    case data_source::kind::criteo: return count_criteo_rows(src.train_path);
  }
  return 0;
}

} // namespace actorps
