#include "actors/guard/tls_middleman.hpp"

#include "actors/guard/tls_config.hpp"

#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor_impl.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/interfaces.hpp>

#include <exception>
#include <memory>

namespace actorps {

namespace {

namespace net = caf::io::network;

class tls_middleman_impl final : public caf::io::middleman_actor_impl {
public:
  tls_middleman_impl(caf::actor_config& cfg, caf::actor basp, handshake_failure_handler on_failure)
    : middleman_actor_impl(cfg, std::move(basp)), on_failure_(std::move(on_failure)) {}

  const char* name() const override { return "tls_middleman"; }

protected:
  caf::expected<caf::io::scribe_ptr> connect(const std::string& host, uint16_t port) override {
    auto fd = net::new_tcp_connection(host, port);
    if (!fd) return std::move(fd.error());
    net::nonblocking(*fd, true);
    std::unique_ptr<tls_session> session;
    try {
      session = std::make_unique<tls_session>(configured_tls(system().config()), *fd, false);
    } catch (const std::exception& e) {
      net::close_socket(*fd);
      if (on_failure_) on_failure_(e.what());
      return caf::make_error(caf::sec::cannot_connect_to_node, e.what());
    }
    auto& mx = static_cast<net::default_multiplexer&>(system().middleman().backend());
    return caf::make_counted<tls_scribe>(mx, *fd, std::move(session), on_failure_);
  }

private:
  handshake_failure_handler on_failure_;
};

} // namespace

caf::io::middleman_actor spawn_tls_middleman(caf::actor_system& sys,
                                             handshake_failure_handler on_failure) {
  auto basp = caf::actor_cast<caf::actor>(
    sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP")));
  // Detached: connect() blocks in the TCP connect, as CAF's own middleman actor does.
  return sys.spawn<tls_middleman_impl, caf::detached + caf::hidden>(std::move(basp),
                                                                   std::move(on_failure));
}

} // namespace actorps
