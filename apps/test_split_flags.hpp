// The data flags of `actorps evaluate` and `actorps export`: which test split to rebuild, with
// the names and defaults of the training flags.
#pragma once

#include "actors/protocol/data_source.hpp"

#include <boost/program_options.hpp>

#include <cstdint>
#include <string>

namespace actorps {

/// The data flags of `actorps evaluate` and `actorps export`: which test split to rebuild.
struct test_split_flags {
  std::string dataset, data_dir;
  std::string test_path;  ///< --test: a CTR model's Criteo test file
  int64_t synthetic_test_rows = 0;
  uint64_t seed = 0;
};

/// Adds --dataset, --data-dir, --synthetic-test-rows, --seed and --test bound to `flags`, with
/// the names and defaults of the training flags (which it sets in `flags`), so that a synthetic
/// run's test split is rebuilt exactly from the flags the training was given.
void add_test_split_options(boost::program_options::options_description& desc,
                            test_split_flags& flags);

/// Where the test split is, for a model taking `cols` features; throws std::invalid_argument
/// naming the flag when --dataset or --synthetic-test-rows is bad, or --test is given (it is
/// for CTR models).
data_source test_split_source(const test_split_flags& flags, int cols);

/// Where a CTR model's test split is: the Criteo file of --test. Throws std::invalid_argument
/// when --test is missing.
data_source criteo_test_source(const test_split_flags& flags);

} // namespace actorps
