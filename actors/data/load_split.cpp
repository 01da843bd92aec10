#include "actors/data/load_split.hpp"

#include "actors/data/csv_dataset.hpp"

namespace actorps {

std::shared_ptr<const dataset> load_split(const data_source& src, bool train) {
  if (src.what == data_source::kind::fashion_mnist)
    return std::make_shared<dataset>(load_fashion_mnist(src.dir, train));
  if (src.what == data_source::kind::csv)
    return std::make_shared<dataset>(load_csv(train ? src.train_path : src.test_path));
  return std::make_shared<dataset>(
    make_synthetic(train ? src.train_rows : src.test_rows, src.cols, src.seed, train));
}

int64_t training_rows(const data_source& src) {
  switch (src.what) {
    case data_source::kind::fashion_mnist: return fashion_mnist_rows(src.dir, true);
    case data_source::kind::synthetic: return src.train_rows;
    case data_source::kind::csv: return load_csv(src.train_path).rows;  // a full parse, for now
  }
  return 0;
}

} // namespace actorps
