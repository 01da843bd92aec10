#include "actors/data/load_split.hpp"

namespace actorps {

std::shared_ptr<const dataset> load_split(const data_source& src, bool train) {
  if (src.what == data_source::kind::fashion_mnist)
    return std::make_shared<dataset>(load_fashion_mnist(src.dir, train));
  return std::make_shared<dataset>(
    make_synthetic(train ? src.train_rows : src.test_rows, src.cols, src.seed, train));
}

} // namespace actorps
