#include "actors/link/data_link_path.hpp"

#include <atomic>

namespace actorps {

namespace {
std::atomic<data_link_path> chosen{data_link_path::automatic};
} // namespace

std::optional<data_link_path> parse_data_link_path(const std::string& text) {
  if (text == "auto") return data_link_path::automatic;
  if (text == "tcp") return data_link_path::tcp;
  if (text == "socket") return data_link_path::socket;
  if (text == "shm") return data_link_path::shm;
  return std::nullopt;
}

const char* data_link_path_name(data_link_path p) {
  switch (p) {
    case data_link_path::automatic: return "auto";
    case data_link_path::tcp: return "tcp";
    case data_link_path::socket: return "socket";
    case data_link_path::shm: return "shm";
  }
  return "?";
}

void set_data_link_path(data_link_path p) { chosen = p; }
data_link_path configured_data_link_path() { return chosen.load(); }

} // namespace actorps
