// A task's network address ("host:port"), as cluster specs and role setups write it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace actorps {

/// Thrown for a malformed address, cluster spec or task; what() names the source and the problem.
struct cluster_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct host_port {
  std::string host;
  uint16_t port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};

/// Parses "host:port"; throws cluster_error starting with `where`.
host_port parse_address(const std::string& text, const std::string& where);

} // namespace actorps
