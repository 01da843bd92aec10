// A connection of CAF's middleman over TLS (tls_session.hpp), for our own doorman
// (guarded_publish.cpp) and dialler (tls_middleman.hpp): the duties of CAF's own scribe, over a
// TLS stream, plus reporting a handshake that fails, and binding the peer's node to its
// certificate's task (peer_roles.hpp) with every BASP message held to that node (basp_origin.hpp).
#pragma once

#include "actors/guard/basp_origin.hpp"
#include "actors/tls/tls_session.hpp"

#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/io/scribe.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace actorps {

/// Told once when a connection fails before its TLS handshake is through (why, in OpenSSL's
/// words: "peer did not return a certificate", "certificate verify failed: self-signed
/// certificate", ...).
using handshake_failure_handler = std::function<void(const std::string& why)>;

/// The read/write policy of a TLS stream: the session's, plus noticing a handshake that fails.
class tls_policy {
public:
  tls_policy(std::unique_ptr<tls_session> session, handshake_failure_handler on_failure);

  caf::io::network::rw_state read_some(size_t& result, caf::io::network::native_socket fd,
                                       void* buf, size_t len);
  caf::io::network::rw_state write_some(size_t& result, caf::io::network::native_socket fd,
                                        const void* buf, size_t len);
  bool must_read_more(caf::io::network::native_socket fd, size_t threshold);

private:
  /// Reports a failure of the handshake, once.
  caf::io::network::rw_state watch(caf::io::network::rw_state state);

  std::unique_ptr<tls_session> session_;
  handshake_failure_handler on_failure_;
  bool reported_ = false;
};

/// The scribe the BASP broker talks to, over a TLS stream; the same duties as CAF's own
/// network::scribe_impl, plus an empty write at launch so that the handshake starts at once.
/// Once the peer's BASP handshake is read, its node id is bound to its certificate's CN until
/// the scribe goes; a message claiming another origin closes the connection, counted
/// (basp_origin::refusals) and logged (rate-limited) with the peer's address and CN.
class tls_scribe : public caf::io::scribe {
public:
  tls_scribe(caf::io::network::default_multiplexer& mx, caf::io::network::native_socket fd,
             std::unique_ptr<tls_session> session, handshake_failure_handler on_failure);
  ~tls_scribe() override;

  bool consume(caf::execution_unit* ctx, const void* buf, size_t num_bytes) override;

  void configure_read(caf::io::receive_policy::config config) override;
  void ack_writes(bool enable) override;
  std::vector<char>& wr_buf() override;
  std::vector<char>& rd_buf() override;
  void graceful_shutdown() override;
  void flush() override;
  std::string addr() const override;
  uint16_t port() const override;
  void add_to_loop() override;
  void remove_from_loop() override;

private:
  void launch();

  bool launched_ = false;
  const tls_session* session_;  // owned by stream_'s policy, as long as this scribe
  basp_origin origin_;
  caf::node_id here_;           // the local node the peer was bound for (none: not bound)
  std::optional<bool> chief_peer_;  // the peer's certificate names chief:0 (read once)
  caf::io::network::stream_impl<tls_policy> stream_;
};

} // namespace actorps
