#include "actors/data/csv_batches.hpp"

#include <algorithm>

namespace actorps {

template class clocked_batches<csv_reader, dense_batch>;

namespace {

csv_options stream_options(int classes) {
  csv_options o;
  o.whole_batches = true;
  o.classes = classes;
  return o;
}

} // namespace

csv_batches::csv_batches(const data_source& src, int worker, int workers, int batch, int cols,
                         int classes)
    : path_(src.train_path), batch_(batch), cols_(cols),
      batches_(src.train_path, worker, workers, batch, src.follow, stream_options(classes)) {}

void csv_batches::fill_batch(int64_t step, float* x, int32_t* y) const {
  const auto& b = batches_.at(step);
  if (b.cols != cols_)
    throw dataset_error(path_ + ": " + std::to_string(b.cols) + " feature columns, but the run "
                        "was planned for " + std::to_string(cols_));
  std::copy(b.x.begin(), b.x.end(), x);
  std::copy(b.y.begin(), b.y.end(), y);
}

} // namespace actorps
