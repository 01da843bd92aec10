// The shard's side of the data links (link_socket.hpp): a ps process listens on a TCP port of its
// own host address, and on an abstract Unix socket for clients on the same host (and network
// namespace: where tasks are given hosts of their own by namespaces, they use TCP), and answers
// every frame a connected worker or evaluator sends by asking its local shard actor — the same
// request, the same reply buffer, as inside one process. A local socket moves a 4 MiB payload
// in about half the time loopback TCP takes on the 2-core VM (1.07 vs 2.2 ms per 4 MiB round
// trip of bare sockets).
#pragma once

#include "actors/net/link_socket.hpp"
#include "actors/protocol/messages.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace actorps {

class shard_link_server {
public:
  using log_fn = std::function<void(const std::string&)>;

  /// Binds and listens on host:port (0: a free port) and on a fresh local socket; serving
  /// starts with serve().
  static caf::expected<std::unique_ptr<shard_link_server>> listen(const std::string& host,
                                                                  uint16_t port, log_fn log);

  /// Where it listens (what the shard announces to clients).
  uint16_t port() const { return port_; }
  const std::string& local_name() const { return local_name_; }

  /// Accepts connections (on a thread of its own) and serves each with a blocking actor of
  /// `sys` that asks `shard`, whose index clients must name in their hello.
  void serve(caf::actor_system& sys, ps_shard_actor shard, int32_t shard_index);

  /// Stops accepting and ends every connection; returns once the accepting thread has ended.
  ~shard_link_server();

  /// Connections refused so far (bad hello, bad frame, wrong shard).
  std::size_t refused() const;

private:
  shard_link_server(int fd, uint16_t port, int local_fd, std::string local_name, log_fn log);
  void accept_loop(int fd, caf::actor_system& sys, ps_shard_actor shard, int32_t shard_index);

  int fd_;
  uint16_t port_;
  int local_fd_;
  std::string local_name_;
  log_fn log_;
  std::thread acceptor_, local_acceptor_;
  mutable std::mutex mutex_;
  bool stopping_ = false;
  std::vector<std::weak_ptr<link_socket>> sessions_;
  std::shared_ptr<std::atomic<std::size_t>> refused_ =
    std::make_shared<std::atomic<std::size_t>>(0);
};

} // namespace actorps
