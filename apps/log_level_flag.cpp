#include "apps/log_level_flag.hpp"

#include "actors/ps/log_level.hpp"
#include "actors/ps/usage_error.hpp"

namespace actorps {

void add_log_level_option(boost::program_options::options_description& desc, std::string& level) {
  desc.add_options()("log-level", boost::program_options::value(&level)->default_value(level),
                     "what the log lines on stderr say: error, warn, info or debug (each with "
                     "the levels before it)");
}

void apply_log_level(const std::string& level) {
  if (!set_log_level(level))
    throw usage_error("--log-level " + level + " is none of error, warn, info, debug");
}

} // namespace actorps
