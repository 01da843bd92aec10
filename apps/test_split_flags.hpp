// The data flags of `actorps evaluate` and `actorps export`: which test split to rebuild, with
// the names and defaults of the training flags.
#pragma once

#include "actors/ps/test_split.hpp"

#include <boost/program_options.hpp>

namespace actorps {

/// Adds --dataset, --data-dir, --synthetic-test-rows, --seed and --test bound to `flags`, with
/// the names and defaults of the training flags (which it sets in `flags`), so that a synthetic
/// run's test split is rebuilt exactly from the flags the training was given.
void add_test_split_options(boost::program_options::options_description& desc,
                            test_split_flags& flags);

} // namespace actorps
