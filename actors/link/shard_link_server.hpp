// The shard's side of the data links (link_socket.hpp): a ps process listens on a TCP port of its
// own host address, and on an abstract Unix socket for clients on the same host (and network
// namespace: where tasks are given hosts of their own by namespaces, they use TCP), and answers
// every frame a connected worker or evaluator sends by asking its local shard actor — the same
// request, the same reply buffer, as inside one process. A local socket moves a 4 MiB payload
// in about half the time loopback TCP takes on the 2-core VM (1.07 vs 2.2 ms per 4 MiB round
// trip of bare sockets).
//
// With TLS files every connection, TCP and local alike, is mutual TLS (tls_stream.hpp): an
// abstract Unix socket has no file permissions, and SO_PEERCRED would tell only a user id, which
// every task of a deployment shares — not which worker is calling. The certificate says that.
// A TLS client on the local socket may then take a one-time ticket to a second, plain local
// socket (the proven one), where the identity its certificate proved carries over without the
// cipher, shared memory included (link_hub.hpp): bytes that never leave the host gain nothing
// from encryption, since a process able to read them could read the task's memory too.
//
// One event loop thread (event_loop.hpp) serves every connection, TCP and local: it accepts,
// reads frames incrementally and hands complete requests to one event-based actor that asks the
// shard; that actor writes each answer with a non-blocking sendmsg itself, and the loop sends
// what the socket did not take (link_hub.hpp). The asker and the shard run on the loop's own
// thread when its requests make them ready (loop_execution_unit.hpp): a request is read,
// applied and answered without waking another thread. The process's thread count does not grow with
// its connections, and link_limits.hpp bounds what clients may hold.
#pragma once

#include "actors/link/link_limits.hpp"
#include "actors/link/link_socket.hpp"
#include "actors/tls/tls_files.hpp"
#include "actors/protocol/messages.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

namespace actorps {

class event_loop;
class link_hub;
class loop_execution_unit;

class shard_link_server {
public:
  using log_fn = std::function<void(const std::string&)>;

  /// Binds and listens on host:port (0: a free port) and on a fresh local socket; serving
  /// starts with serve(). Refusals and other repetitive lines reach `log` rate-limited. With
  /// `tls` enabled every connection, TCP and local, is mutual TLS with those files (a client
  /// must present a certificate of their CA; its CN decides what it may ask); else plain.
  static caf::expected<std::unique_ptr<shard_link_server>>
  listen(const std::string& host, uint16_t port, log_fn log, link_limits limits = {},
         tls_files tls = {});

  /// Where it listens (what the shard announces to clients).
  uint16_t port() const { return port_; }
  const std::string& local_name() const { return local_name_; }
  /// The plain local socket for clients proven by a ticket (TLS only; "" where there is none).
  const std::string& proven_name() const { return proven_name_; }

  /// Starts the event loop thread, which accepts connections and serves each by asking `shard`,
  /// whose index clients must name in their hello. Call once.
  void serve(caf::actor_system& sys, ps_shard_actor shard, int32_t shard_index);

  /// Stops accepting and ends every connection; returns once the loop thread has ended.
  ~shard_link_server();

  /// Connections refused so far (bad hello, bad or oversize frame, wrong shard, over the
  /// connection limit, silent past the hello timeout, a stranger closed to make room).
  std::size_t refused() const;
  /// Requests refused because the client's certificate may not make them (TLS only).
  std::size_t unauthorised() const;
  /// Hellos on the proven local socket without a live ticket (counted in refused() too).
  std::size_t unproven() const;
  /// unauthorised() as a function that may outlive this server (0 before serve(), its last
  /// count after the server ended): the shard adds it to its own refusals (shard_config).
  std::function<std::size_t()> unauthorised_counter() const;
  /// Connections open now (hello pending or served).
  std::size_t connections() const;
  /// Strangers (hello not answered) closed to make room for newer connections (link_limits.hpp).
  std::size_t evicted() const;
  /// The largest request frame accepted now: link_limits::frame_limit_before_init until the
  /// shard's size is known, then request_frame_limit().
  std::size_t frame_limit() const;
  /// Turns the asker and the shard have run on the loop's own thread (loop_execution_unit.hpp).
  std::size_t loop_turns() const;
  /// Parts of push_pull replies sent ahead of their answers (reply_stream.hpp).
  std::size_t parts_sent() const;

private:
  shard_link_server(int fd, uint16_t port, int local_fd, std::string local_name, log_fn log,
                    link_limits limits, tls_files tls);

  int fd_;
  uint16_t port_;
  int local_fd_;
  std::string local_name_;
  int proven_fd_ = -1;
  std::string proven_name_;
  log_fn log_;
  link_limits limits_;
  tls_files tls_;
  std::shared_ptr<event_loop> loop_;  // shared with the shard asker and its hub
  std::shared_ptr<link_hub> hub_;     // shared with the shard asker, which answers through it
  // hub_ once serve() made it, for unauthorised_counter() (read with std::atomic_load)
  std::shared_ptr<std::shared_ptr<link_hub>> counted_hub_ =
    std::make_shared<std::shared_ptr<link_hub>>();
  caf::actor asker_;
  std::shared_ptr<loop_execution_unit> unit_;  // runs the asker and the shard on the loop
};

} // namespace actorps
