#include "apps/test_split_flags.hpp"

#include "actors/ps/training_flags.hpp"

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
     "a CTR model's (lr, dlrm, wdl, deepfm) test split: a Criteo file, plain or gzip (label, "
     "I1-I13, C1-C26)");
}

} // namespace actorps
