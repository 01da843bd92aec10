#include "actors/net/tls_scribe.hpp"

namespace actorps {

namespace net = caf::io::network;

tls_policy::tls_policy(std::unique_ptr<tls_session> session, handshake_failure_handler on_failure)
  : session_(std::move(session)), on_failure_(std::move(on_failure)) {}

net::rw_state tls_policy::watch(net::rw_state state) {
  if (state == net::rw_state::failure && !reported_ && !session_->established()) {
    reported_ = true;  // the stream closes the connection now
    if (on_failure_) on_failure_(session_->failure());
  }
  return state;
}

net::rw_state tls_policy::read_some(size_t& result, net::native_socket, void* buf, size_t len) {
  return watch(session_->read_some(result, buf, len));
}

net::rw_state tls_policy::write_some(size_t& result, net::native_socket, const void* buf,
                                     size_t len) {
  return watch(session_->write_some(result, buf, len));
}

bool tls_policy::must_read_more(net::native_socket, size_t threshold) {
  return session_->must_read_more(threshold);
}

tls_scribe::tls_scribe(net::default_multiplexer& mx, net::native_socket fd,
                       std::unique_ptr<tls_session> session, handshake_failure_handler on_failure)
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
