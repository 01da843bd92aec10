#include "actors/guard/tls_scribe.hpp"

#include "actors/protocol/peer_roles.hpp"
#include "actors/protocol/rate_limited_log.hpp"
#include "actors/protocol/log.hpp"

#include <caf/io/abstract_broker.hpp>

#include <algorithm>

namespace actorps {

namespace net = caf::io::network;

namespace {

/// The process's log of connections closed for a forged origin: at most 5 lines per 10 s.
rate_limited_log& origin_log() {
  static rate_limited_log log{[](const std::string& line) { log_line(log_level::warn, "tls", line); }};
  return log;
}

} // namespace

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
  : scribe(net::conn_hdl_from_socket(fd)), session_(session.get()),
    stream_(mx, fd, std::move(session), std::move(on_failure)) {}

tls_scribe::~tls_scribe() {
  if (here_ != caf::none) unbind_peer(here_, origin_.peer());
}

bool tls_scribe::consume(caf::execution_unit* ctx, const void* buf, size_t num_bytes) {
  auto here = parent() ? parent()->system().node() : caf::node_id{};
  auto cn = [&] { return session_->peer_common_name(); };
  if (!chief_peer_) chief_peer_ = role_from_cn(cn()).is("chief", 0);  // the handshake is done
  auto why = origin_.inspect(ctx, rd_buf(), num_bytes, here, [&](const caf::node_id& peer) {
    if (!bind_peer(here, peer, cn())) return false;
    here_ = here;
    return true;
  }, *chief_peer_);
  if (!why.empty()) {
    origin_log().write("forged origin", "closed the connection of " + addr() + ":"
                                          + std::to_string(port()) + " (certificate " + cn()
                                          + "): it sent " + why);
    // CAF never sees these bytes: the broker learns that the connection closed, as after a
    // read error, and forgets the peer's node (its proxies here go down). Spoiled bytes alone
    // do not close it: CAF drops a direct message it cannot read and reads on.
    io_failure(ctx, caf::io::network::operation::read);
    return false;
  }
  return scribe::consume(ctx, buf, num_bytes);
}

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
