#include "apps/value_bound_flags.hpp"

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
     "is refused when loading")
    ("gradient-norm-bound", po::value(&b.gradient_norm_bound)->default_value(b.gradient_norm_bound),
     "a push whose gradient norm is beyond this many times the median norm of the shard's last "
     "64 pushes (from every worker) is refused whole and counted (norms_refused); the first 16 "
     "pushes set the scale; 0: no bound");
}

} // namespace actorps
