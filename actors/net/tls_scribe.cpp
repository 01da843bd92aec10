#include "actors/net/tls_scribe.hpp"

#include <openssl/err.h>

namespace actorps {

namespace net = caf::io::network;

std::string take_ssl_reasons() {
  std::string out;
  while (auto code = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(code);
    std::string text = reason ? reason : "error " + std::to_string(code);
    if (out.find(text) != std::string::npos) continue;
    out += (out.empty() ? "" : "; ") + text;
  }
  return out;
}

tls_policy::tls_policy(caf::openssl::session_ptr session, handshake_failure_handler on_failure)
  : session_(std::move(session)), on_failure_(std::move(on_failure)) {}

net::rw_state tls_policy::watch(net::rw_state state, size_t moved) {
  if (established_) return state;
  if (moved > 0) {
    established_ = true;
  } else if (state == net::rw_state::failure) {
    established_ = true;  // reported once: the stream closes the connection now
    auto why = take_ssl_reasons();
    if (on_failure_)
      on_failure_(why.empty() ? "the peer closed the connection during the TLS handshake" : why);
  }
  return state;
}

// CAF 0.17.6's session leaves `result` as it was when the handshake is still going on or has
// failed, and the stream passes an uninitialised count for writes: it then added garbage to the
// bytes written and dropped what it had to send (a BASP handshake sent while SSL_accept was
// still waiting, seen in tests). Zero it first.
net::rw_state tls_policy::read_some(size_t& result, net::native_socket fd, void* buf,
                                    size_t len) {
  // The session leaves OpenSSL's (per-thread) error queue as it is: what is in it now is ours.
  if (!established_) ERR_clear_error();
  result = 0;
  auto state = session_->read_some(result, fd, buf, len);
  if (state != net::rw_state::success) result = 0;
  return watch(state, result);
}

net::rw_state tls_policy::write_some(size_t& result, net::native_socket fd, const void* buf,
                                     size_t len) {
  if (!established_) ERR_clear_error();
  result = 0;
  auto state = session_->write_some(result, fd, buf, len);
  if (state != net::rw_state::success) result = 0;
  return watch(state, result);
}

bool tls_policy::must_read_more(net::native_socket fd, size_t threshold) {
  return session_->must_read_more(fd, threshold);
}

tls_scribe::tls_scribe(net::default_multiplexer& mx, net::native_socket fd,
                       caf::openssl::session_ptr session, handshake_failure_handler on_failure)
  : scribe(net::conn_hdl_from_socket(fd)),
    stream_(mx, fd, std::move(session), std::move(on_failure)) {}

void tls_scribe::configure_read(caf::io::receive_policy::config config) {
  stream_.configure_read(config);
  if (!launched_) launch();
}

void tls_scribe::ack_writes(bool enable) { stream_.ack_writes(enable); }

std::vector<char>& tls_scribe::wr_buf() { return stream_.wr_buf(); }

std::vector<char>& tls_scribe::rd_buf() { return stream_.rd_buf(); }

void tls_scribe::graceful_shutdown() {
  stream_.graceful_shutdown();
  detach(&stream_.backend(), false);
}

void tls_scribe::flush() { stream_.flush(this); }

std::string tls_scribe::addr() const {
  auto host = net::remote_addr_of_fd(stream_.fd());
  return host ? *host : "";
}

uint16_t tls_scribe::port() const {
  auto port = net::remote_port_of_fd(stream_.fd());
  return port ? *port : 0;
}

void tls_scribe::launch() {
  launched_ = true;
  stream_.start(this);
  // With nothing to send yet the stream would not ask for write events, and a handshake that
  // wants to write (SSL_accept's answer) would wait for the peer's next bytes.
  stream_.force_empty_write(this);
}

void tls_scribe::add_to_loop() { stream_.activate(this); }

void tls_scribe::remove_from_loop() { stream_.passivate(); }

} // namespace actorps
