// A connection of CAF's middleman over TLS, for our own doorman (guarded_publish.cpp): CAF 0.17's
// OpenSSL module keeps its scribe in an anonymous namespace, so publishing with a doorman of our
// own (to report refused peers) needs a scribe of our own around the module's public session.
//
// What the session verifies (libcaf_openssl 0.17.6, session.cpp): once any openssl.* key is set,
// every session's context loads our certificate, key and CA and sets SSL_VERIFY_PEER |
// SSL_VERIFY_FAIL_IF_NO_PEER_CERT, on the accepting side too. SSL_accept therefore fails for a
// peer that sends no certificate or one the CA did not sign, and until it succeeds no byte
// reaches the BASP broker: such a peer cannot send a single message. It checks no host name and
// no CN (any certificate of the cluster's CA passes): who may do what is decided above it.
#pragma once

#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/io/scribe.hpp>
#include <caf/openssl/session.hpp>

#include <functional>
#include <string>

namespace actorps {

/// OpenSSL's reasons for the last failure on this thread ("certificate verify failed"), oldest
/// first, without repeats; the thread's error queue is empty afterwards.
std::string take_ssl_reasons();

/// Told once when a connection fails before its TLS handshake is through (why, in OpenSSL's
/// words: "peer did not return a certificate", "certificate verify failed", ...).
using handshake_failure_handler = std::function<void(const std::string& why)>;

/// The read/write policy of a TLS stream: the session's, plus noticing a handshake that fails.
class tls_policy {
public:
  tls_policy(caf::openssl::session_ptr session, handshake_failure_handler on_failure);

  caf::io::network::rw_state read_some(size_t& result, caf::io::network::native_socket fd,
                                       void* buf, size_t len);
  caf::io::network::rw_state write_some(size_t& result, caf::io::network::native_socket fd,
                                        const void* buf, size_t len);
  bool must_read_more(caf::io::network::native_socket fd, size_t threshold);

private:
  /// Marks the handshake done once plaintext moved, or reports its failure once.
  caf::io::network::rw_state watch(caf::io::network::rw_state state, size_t moved);

  caf::openssl::session_ptr session_;
  handshake_failure_handler on_failure_;
  bool established_ = false;  // plaintext moved: the handshake is through
};

/// The scribe the BASP broker talks to, over a TLS stream; the same duties as CAF's own
/// network::scribe_impl, plus an empty write at launch so that the handshake starts at once.
class tls_scribe : public caf::io::scribe {
public:
  tls_scribe(caf::io::network::default_multiplexer& mx, caf::io::network::native_socket fd,
             caf::openssl::session_ptr session, handshake_failure_handler on_failure);

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
  caf::io::network::stream_impl<tls_policy> stream_;
};

} // namespace actorps
