// The end-of-run summary of `actorps simulate` and the chief task, on stdout, and the exit
// status it calls for. Private to actors/node.
#pragma once

#include "actors/protocol/messages.hpp"

namespace actorps {

/// Prints the end-of-run summary to stdout; returns the exit status it calls for (said on
/// stderr when not 0; deploy/exit_codes.hpp): 138 when every worker was lost before the last
/// clock, 1 when every checkpoint or the final one failed, else 0.
int print_summary(const run_summary& summary);

} // namespace actorps
