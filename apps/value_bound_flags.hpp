// --max-gradient and --max-parameter, on every command that runs shards (simulate, chief, ps,
// run): the magnitudes a shard lets into its state (actors/ps/value_bounds.hpp). A ps task takes
// them from its own command line, never from the chief: give every replica the same ones.
#pragma once

#include "actors/ps/value_bounds.hpp"

#include <boost/program_options.hpp>

namespace actorps {

/// --max-parameter of `actorps predict` and `actorps evaluate`: the bound a served model's
/// parameters must keep.
inline constexpr const char* max_parameter_help =
  "refuse a model with a parameter beyond this magnitude (the bound training keeps parameters "
  "within: give the run's --max-parameter if it raised it)";

/// Adds both flags, with their defaults, bound to `bounds`.
void add_value_bound_options(boost::program_options::options_description& desc,
                             value_bounds& bounds);

// check_value_bounds (actors/ps/training_flags.hpp) checks them.

} // namespace actorps
