#include "actors/ps/test_split.hpp"

#include <stdexcept>

namespace actorps {

data_source test_split_source(const test_split_flags& f, int cols) {
  if (!f.test_path.empty())
    throw std::invalid_argument("--test is the test file of a CTR model (lr, dlrm, wdl, deepfm); "
                                "this model's test split is given by --dataset");
  data_source src;
  if (f.dataset == "fashion-mnist") {
    src.what = data_source::kind::fashion_mnist;
    src.dir = f.data_dir;
  } else if (f.dataset == "synthetic") {
    if (f.synthetic_test_rows <= 0 || f.synthetic_test_rows >= (1 << 30))
      throw std::invalid_argument("--synthetic-test-rows must be positive");
    src.what = data_source::kind::synthetic;
    src.test_rows = static_cast<int>(f.synthetic_test_rows);
    src.seed = f.seed;
    src.cols = cols;
  } else {
    throw std::invalid_argument("--dataset must be fashion-mnist or synthetic (got " + f.dataset
                                + ")");
  }
  return src;
}

data_source criteo_test_source(const test_split_flags& f) {
  if (f.test_path.empty())
    throw std::invalid_argument("--test FILE is required for a CTR model: its Criteo test split");
  data_source src;
  src.what = data_source::kind::criteo;
  src.test_path = f.test_path;
  return src;
}

} // namespace actorps
