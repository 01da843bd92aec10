// One TLS connection of CAF's middleman, on OpenSSL directly.
//
// Why not CAF 0.17.6's openssl::session: it hides its SSL object, so a scribe cannot tell a
// finished handshake from one still going on (a connection CAF closes as redundant right after
// the handshake read as a refused peer), nor read the peer's certificate (whose CN names its
// task, for authorisation by role); it leaves the byte count unset while the handshake goes on
// (the stream then added garbage to the bytes written); and it reloads the certificate files
// for every connection. The verification is the same: every session demands the peer's
// certificate and verifies it against the cluster's CA, on both ends (SSL_VERIFY_PEER |
// SSL_VERIFY_FAIL_IF_NO_PEER_CERT), so a peer without one of the CA's certificates never gets a
// byte to CAF's message layer.
#pragma once

#include "actors/tls/tls_files.hpp"

#include <caf/io/network/native_socket.hpp>
#include <caf/io/network/rw_state.hpp>

#include <memory>
#include <string>
#include <vector>

typedef struct ssl_st SSL;

namespace actorps {

class tls_session {
public:
  /// A session on `fd` (non-blocking, connected) with the process's TLS files: the accepting
  /// end when `accepting`, else the dialling end. Throws std::runtime_error when the files
  /// cannot be loaded (they were checked at start: check_tls_files).
  tls_session(const tls_files& files, caf::io::network::native_socket fd, bool accepting);
  ~tls_session();
  tls_session(const tls_session&) = delete;
  tls_session& operator=(const tls_session&) = delete;

  /// The stream policy's calls (caf::io::network::stream_impl): `result` is always set.
  caf::io::network::rw_state read_some(size_t& result, void* buf, size_t len);
  caf::io::network::rw_state write_some(size_t& result, const void* buf, size_t len);
  bool must_read_more(size_t threshold) const;

  /// For the data link's bulk transfers, before the handshake: each read takes as many records
  /// as the socket holds (read ahead into a buffer of 256 KiB, not two reads per 16 KiB record),
  /// and the kernel's TLS is used where the kernel offers it (SSL_OP_ENABLE_KTLS; where it does
  /// not, as on a kernel without the tls module, OpenSSL goes on in user space).
  void tune_for_bulk();
  /// Whether whole records may wait in the session's read-ahead buffer, which the socket's
  /// readiness will not tell of: bytes are held, and the last read did not stop for lack of them.
  bool holds_unread() const;

  /// Whether the handshake is through (the peer's certificate verified).
  bool established() const;
  /// Why the last call failed: the certificate verifier's verdict or OpenSSL's reasons.
  const std::string& failure() const { return failure_; }
  /// The verified peer certificate's subject CN ("worker:1"); "" before the handshake.
  std::string peer_common_name() const;
  /// Whether the last call that moved nothing waits for the socket to be writable (OpenSSL's
  /// SSL_ERROR_WANT_WRITE) rather than readable: what a caller polling the socket waits for.
  bool wants_write() const { return wants_write_; }

private:
  /// Drives the handshake on; false when it failed (failure_ says why).
  bool advance_handshake();
  /// Sends what was written before the handshake was through; false on failure.
  bool flush_early();
  caf::io::network::rw_state outcome(int ret, size_t& result);

  SSL* ssl_;
  bool established_ = false;  // SSL_do_handshake said 1 (SSL_is_init_finished is 0 again
                              // while post-handshake messages are written)
  std::string failure_;
  bool wants_write_ = false;
  bool read_starved_ = false;  // the last read moved nothing for want of the peer's bytes
  /// Bytes CAF wrote before the handshake was through (its BASP handshake, sent on accept).
  /// Taken at once: holding them in the stream would keep it asking for write events on a
  /// writable socket, a busy loop as long as a peer leaves its handshake unfinished.
  std::vector<char> early_;
};

} // namespace actorps
