// `--prometheus-port PORT`: this process's figures at http://HOST:PORT/metrics in Prometheus's
// text format, served by prometheus-cpp's pull exposer (civetweb). One endpoint per process:
//   - the chief's: the run as its metrics events tell it (metrics.hpp), counted as they come on
//     the chief's thread (prometheus-cpp's metrics are atomics): samples, clocks, staleness, loss,
//     evaluations, checkpoints, failures, recoveries, fail-overs;
//   - every shard alive in the process (shard_census.hpp), read when scraped by asking each for
//     its stats, as the chief does: nothing is added to a push's or a pull's path;
//   - the process's own CPU seconds and memory (/proc/self).
// The endpoint is unauthenticated, like a Prometheus exporter; it is bounded as the other ports
// are: a few threads, a few queued connections, small requests, and idle connections closed.
#pragma once

#include "actors/chief/metrics.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace actorps {

/// What the endpoint's HTTP server takes from any client.
struct metrics_endpoint_limits {
  int threads = 2;               ///< requests served at once
  int queued = 8;                ///< connections accepted and waiting for a thread, at most
  int max_request_bytes = 8192;  ///< a request line and headers; a larger request is refused
  int idle_ms = 5000;            ///< a connection that sends nothing this long is closed
};

class metrics_endpoint {
public:
  /// Serves /metrics on `host` (an address or a name of this host) at `port` (0: one the OS
  /// picks), reading the shards of `sys`; the error names the address. Destroy it before `sys`.
  static caf::expected<std::unique_ptr<metrics_endpoint>>
  open(caf::actor_system& sys, const std::string& host, uint16_t port,
       metrics_endpoint_limits limits = {});
  ~metrics_endpoint();
  metrics_endpoint(const metrics_endpoint&) = delete;
  metrics_endpoint& operator=(const metrics_endpoint&) = delete;

  /// Counts `file`'s events from now on (the chief's; call before the run starts). The counts
  /// outlive the endpoint: a late event changes nothing anyone reads.
  void count_events_of(metrics_file& file);

  /// Where it listens, "host:port" (an IPv6 address in brackets).
  const std::string& address() const;

private:
  struct impl;
  explicit metrics_endpoint(std::unique_ptr<impl> state);
  std::unique_ptr<impl> impl_;
};

} // namespace actorps
