#include "apps/test_split_flags.hpp"

#include "apps/training_flags.hpp"

#include <stdexcept>

namespace po = boost::program_options;

namespace actorps {

void add_test_split_options(po::options_description& desc, test_split_flags& f) {
  const training_flags training;
  f.dataset = training.dataset;
  f.data_dir = training.data_dir;
  f.synthetic_test_rows = training.synthetic_test_rows;
  f.seed = training.seed;
  desc.add_options()
    ("dataset", po::value(&f.dataset)->default_value(f.dataset),
     "fashion-mnist | synthetic: whose test split to evaluate on")
    ("data-dir", po::value(&f.data_dir)->default_value(f.data_dir),
     "directory holding the Fashion-MNIST IDX files")
    ("synthetic-test-rows", po::value(&f.synthetic_test_rows)->default_value(f.synthetic_test_rows),
     "test rows of the synthetic dataset (as given to the training)")
    ("seed", po::value(&f.seed)->default_value(f.seed),
     "seed of the synthetic dataset (as given to the training)")
    ("test", po::value(&f.test_path),
     "a CTR model's (lr, dlrm) test split: a Criteo file, plain or gzip (label, I1-I13, C1-C26)");
}

data_source test_split_source(const test_split_flags& f, int cols) {
  if (!f.test_path.empty())
    throw std::invalid_argument("--test is the test file of a CTR model (lr, dlrm); this model's "
                                "test split is given by --dataset");
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
