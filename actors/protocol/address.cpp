#include "actors/protocol/address.hpp"

#include <algorithm>

namespace actorps {

host_port parse_address(const std::string& text, const std::string& where) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw cluster_error(where + ": '" + text + "' is not host:port");
  auto port_text = text.substr(colon + 1);
  if (port_text.size() > 5
      || !std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw cluster_error(where + ": '" + text + "' has no valid port");
  auto port = std::stoi(port_text);
  if (port < 1 || port > 65535) throw cluster_error(where + ": port of '" + text + "' is out of range");
  return {text.substr(0, colon), static_cast<uint16_t>(port)};
}

} // namespace actorps
