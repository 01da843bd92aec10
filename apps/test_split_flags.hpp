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
  int64_t synthetic_test_rows = 0;
  uint64_t seed = 0;
};

/// Adds --dataset, --data-dir, --synthetic-test-rows and --seed bound to `flags`, with the
/// names and defaults of the training flags (which it sets in `flags`), so that a synthetic
/// run's test split is rebuilt exactly from the flags the training was given.
void add_test_split_options(boost::program_options::options_description& desc,
                            test_split_flags& flags);

/// Where the test split is, for a model taking `cols` features; throws std::invalid_argument
/// naming the flag when --dataset or --synthetic-test-rows is bad.
data_source test_split_source(const test_split_flags& flags, int cols);

} // namespace actorps
