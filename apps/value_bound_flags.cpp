#include "apps/value_bound_flags.hpp"

#include "apps/training_flags.hpp"  // usage_error

namespace po = boost::program_options;

namespace actorps {

void add_value_bound_options(po::options_description& desc, value_bounds& b) {
  desc.add_options()
    ("max-gradient", po::value(&b.max_gradient)->default_value(b.max_gradient),
     "a push holding a gradient value beyond ±this (or NaN, inf) is refused whole and counted "
     "(gradients_refused)")
    ("max-parameter", po::value(&b.max_parameter)->default_value(b.max_parameter),
     "an update that would leave a parameter beyond ±this (or a non-finite optimizer state) is "
     "refused with the state unchanged and counted (updates_refused); a checkpoint holding one "
     "is refused when loading");
}

void check_value_bounds(const value_bounds& b) {
  if (auto why = invalid_bound(b.max_gradient); !why.empty())
    throw usage_error("--max-gradient " + why);
  if (auto why = invalid_bound(b.max_parameter); !why.empty())
    throw usage_error("--max-parameter " + why);
}

} // namespace actorps
