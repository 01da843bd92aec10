// A bad option or bad input of a run, named: what the command line prints as one line and
// exit 2 (README's "Exit codes").
#pragma once

#include <stdexcept>

namespace actorps {

/// A bad flag or bad input: what() names the flag (or file) and what is wrong.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace actorps
