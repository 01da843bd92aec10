// Where a labelled test split is, from the data flags of `actorps evaluate` and `actorps export`
// (--dataset, --data-dir, --synthetic-test-rows, --seed, --test), named and defaulted as the
// training flags are, so that a synthetic run's test split is rebuilt exactly.
#pragma once

#include "actors/ps.hpp"  // data_source

#include <cstdint>
#include <string>

namespace actorps {

/// Which test split to rebuild.
struct test_split_flags {
  std::string dataset, data_dir;
  std::string test_path;  ///< --test: a CTR model's Criteo test file
  int64_t synthetic_test_rows = 0;
  uint64_t seed = 0;
};

/// Where the test split is, for a model taking `cols` features; throws std::invalid_argument
/// naming the flag when --dataset or --synthetic-test-rows is bad, or --test is given (it is
/// for CTR models).
data_source test_split_source(const test_split_flags& flags, int cols);

/// Where a CTR model's test split is: the Criteo file of --test. Throws std::invalid_argument
/// when --test is missing.
data_source criteo_test_source(const test_split_flags& flags);

} // namespace actorps
