// --log-level error|warn|info|debug, on every command that runs tasks (simulate, chief, ps,
// worker, evaluator): how much the log lines on stderr say. The progress line is not a log
// line and is never filtered.
#pragma once

#include <boost/program_options.hpp>

#include <string>

namespace actorps {

/// Adds --log-level (default info) bound to `level`.
void add_log_level_option(boost::program_options::options_description& desc, std::string& level);

/// Sets this process's log level; throws usage_error naming --log-level when `level` is none of
/// error, warn, info, debug.
void apply_log_level(const std::string& level);

} // namespace actorps
