#include "actors/ps/log_level.hpp"

#include "actors/protocol/log.hpp"

namespace actorps {

bool set_log_level(const std::string& level) {
  auto parsed = parse_log_level(level);
  if (!parsed) return false;
  console::process().set_level(*parsed);
  return true;
}

bool is_log_level(const std::string& level) {
  return parse_log_level(level).has_value();
}

void log_info(const std::string& who, const std::string& text) { log_line(who, text); }

} // namespace actorps
