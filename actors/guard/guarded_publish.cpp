#include "actors/guard/guarded_publish.hpp"
#include "actors/guard/bounded_scribe.hpp"
#include "actors/guard/caf_port_guard.hpp"
#include "actors/protocol/rate_limited_log.hpp"

#include "actors/guard/tls_config.hpp"
#include "actors/guard/tls_scribe.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/doorman.hpp>
#include <caf/io/network/acceptor_impl.hpp>
#include <caf/io/network/scribe_impl.hpp>
#include <caf/openssl/manager.hpp>

#include <exception>
#include <caf/send.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>

namespace actorps {

namespace {

namespace basp = caf::io::basp;
namespace net = caf::io::network;

using shared_handler = std::shared_ptr<const refusal_handler>;

/// "ip:port" of the peer on `fd` ("[ip]:port" for IPv6).
std::string peer_of(net::native_socket fd) {
  auto host = net::remote_addr_of_fd(fd);
  auto port = net::remote_port_of_fd(fd);
  if (!host || !port) return "a peer of unknown address";
  auto ip = host->find(':') == std::string::npos ? *host : "[" + *host + "]";
  return ip + ":" + std::to_string(*port);
}

/// The first bytes of `buf` in hex, for the log: enough to tell TLS or HTTP from noise.
std::string leading_bytes(const void* buf, std::size_t n) {
  auto bytes = static_cast<const unsigned char*>(buf);
  std::string out;
  for (std::size_t i = 0; i < std::min<std::size_t>(n, 8); ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%s%02x", i ? " " : "", bytes[i]);
    out += hex;
  }
  return out;
}

/// The connection a doorman of ours accepted, over plain TCP (Base: CAF's scribe_impl) or TLS
/// (tls_scribe). Until the peer's BASP handshake is through, each read (the first BASP header,
/// then the handshake's payload) is screened; after it, a bool check.
template <class Base>
class guarded_scribe final : public Base {
public:
  template <class... Args>
  guarded_scribe(std::string peer, shared_handler on_refused, Args&&... base_args)
    : Base(std::forward<Args>(base_args)...), peer_(std::move(peer)),
      on_refused_(std::move(on_refused)) {}

  bool consume(caf::execution_unit* ctx, const void* buf, std::size_t n) override {
    if (trusted_) return Base::consume(ctx, buf, n);
    return screen(ctx, buf, n);
  }

  // The BASP broker refuses a connection by closing it from within its handling of the data,
  // that is, inside scribe::consume.
  void graceful_shutdown() override {
    shut_down_ = true;
    Base::graceful_shutdown();
  }

private:
  bool screen(caf::execution_unit* ctx, const void* buf, std::size_t n) {
    std::string why;
    if (!got_header_) {
      // A CAF peer that connects waits for our server handshake (sent on accept), then answers
      // with a client handshake: that is the first message it ever sends on this connection.
      got_header_ = true;
      // scribe::consume hands the broker rd_buf(), not `buf`: read (and mark) what CAF reads.
      auto& bytes = this->rd_buf();
      basp::header hdr;
      caf::binary_deserializer source{ctx, bytes.data(), std::min(n, bytes.size())};
      if (n != basp::header_size || bytes.size() < n || source(hdr)
          || hdr.operation != basp::message_type::client_handshake || !basp::valid(hdr)) {
        why = "not a CAF peer (its first " + std::to_string(n) + " bytes, "
              + leading_bytes(bytes.data(), std::min(n, bytes.size()))
              + " ..., are not a BASP handshake)";
        // CAF keeps a connection open whose first header is, say, a well-formed heartbeat; an
        // operation that exists nowhere makes sure it refuses this one.
        if (!bytes.empty()) bytes[0] = static_cast<char>(0xff);
      } else {
        trusted_ = hdr.payload_len == 0;
      }
    } else {
      trusted_ = true;  // this was the handshake's payload
    }
    auto result = Base::consume(ctx, buf, n);
    if (shut_down_) {
      trusted_ = true;  // reported once; CAF reads nothing more from it
      if (*on_refused_)
        (*on_refused_)(peer_, why.empty() ? "its BASP handshake was malformed" : why);
    } else if (!why.empty()) {
      trusted_ = true;  // CAF kept it after all: its call, and nothing to report
    } else if (trusted_) {
      this->handshake_through();  // its deadline is off (bounded_scribe)
    }
    return result;
  }

  std::string peer_;
  shared_handler on_refused_;
  bool trusted_ = false;     // the handshake is through, or the verdict is in
  bool got_header_ = false;  // the first header was read: what comes next is its payload
  bool shut_down_ = false;   // the broker closed this connection
};

/// CAF's TCP accept policy, through the port's guard (caf_port_guard::accept: no spinning when
/// the process is out of descriptors).
struct guarded_accept_policy {
  std::shared_ptr<caf_port_guard> guard;
  bool try_accept(net::native_socket& result, net::native_socket listener) {
    return guard->accept(result, listener);
  }
};

/// An acceptor that hands the BASP broker guarded_scribes instead of CAF's own scribe_impl,
/// made the way CAF 0.17.6's default_multiplexer::new_scribe makes them; with `tls`, each over
/// a TLS session of the OpenSSL module, the way its own doorman makes them. Its other duties
/// are those of CAF's doorman_impl, over an acceptor of our accept policy. Each connection is
/// held to the port's bounds (bounded_scribe.hpp); one over the port's connection limit is
/// closed at once.
class guarded_doorman final : public caf::io::doorman {
public:
  guarded_doorman(net::default_multiplexer& mx, net::native_socket fd, shared_handler on_refused,
                  bool tls, std::shared_ptr<caf_port_guard> guard)
    : doorman(net::accept_hdl_from_socket(fd)), acceptor_(mx, fd, guarded_accept_policy{guard}),
      on_refused_(std::move(on_refused)), tls_(tls), guard_(std::move(guard)) {}

  bool new_connection() override {
    auto fd = acceptor_.accepted_socket();
    if (detached()) {  // the broker let go of this acceptor; its socket is not gone yet
      net::close_socket(fd);
      return false;
    }
    auto& mx = acceptor_.backend();
    auto peer = peer_of(fd);
    if (!guard_->admit(peer)) {
      net::close_socket(fd);
      return false;
    }
    net::keepalive(fd, true);  // as CAF does; a failure only costs the keepalive
    auto closed_by_guard = std::make_shared<bool>(false);
    caf::io::scribe_ptr scribe;
    if (tls_) {
      // Non-blocking before the first handshake step: a peer that sends nothing must not stall
      // the network thread.
      net::nonblocking(fd, true);
      std::unique_ptr<tls_session> session;
      try {
        session = std::make_unique<tls_session>(configured_tls(parent()->system().config()), fd,
                                                true);
      } catch (const std::exception& e) {  // files checked at start: gone since, or unreadable
        report(peer, e.what());
        net::close_socket(fd);
        guard_->closed();
        return false;
      }
      scribe = caf::make_counted<guarded_scribe<bounded_scribe<tls_scribe>>>(
        peer, on_refused_, guard_, peer, closed_by_guard, mx, fd, std::move(session),
        [on_refused = on_refused_, peer, closed_by_guard](const std::string& why) {
          if (!*closed_by_guard) report(*on_refused, peer, why);
        });
    } else {
      scribe = caf::make_counted<guarded_scribe<bounded_scribe<net::scribe_impl>>>(
        peer, on_refused_, guard_, peer, closed_by_guard, mx, fd);
    }
    auto hdl = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mx, hdl);
  }

  void graceful_shutdown() override {
    acceptor_.graceful_shutdown();
    detach(&acceptor_.backend(), false);
  }

  void launch() override { acceptor_.start(this); }

  std::string addr() const override {
    auto x = net::local_addr_of_fd(acceptor_.fd());
    return x ? std::move(*x) : std::string();
  }

  uint16_t port() const override {
    auto x = net::local_port_of_fd(acceptor_.fd());
    return x ? *x : 0;
  }

  void add_to_loop() override { acceptor_.activate(this); }

  void remove_from_loop() override { acceptor_.passivate(); }

private:
  static void report(const refusal_handler& on_refused, const std::string& peer,
                     const std::string& why) {
    if (on_refused) on_refused(peer, "no TLS handshake with the cluster's certificates (" + why + ")");
  }
  void report(const std::string& peer, const std::string& why) const {
    report(*on_refused_, peer, why.empty() ? "it closed the connection" : why);
  }

  net::acceptor_impl<guarded_accept_policy> acceptor_;
  shared_handler on_refused_;
  bool tls_;
  std::shared_ptr<caf_port_guard> guard_;
};

} // namespace

caf::expected<uint16_t> publish_guarded(caf::actor_system& sys, caf::strong_actor_ptr whom,
                                        std::set<std::string> sigs, const std::string& host,
                                        uint16_t port, refusal_handler on_refused,
                                        const caf_port_limits& limits) {
  // The steps of middleman::publish and middleman_actor_impl::put.
  if (!whom) return caf::make_error(caf::sec::cannot_publish_invalid_actor);
  auto& mm = sys.middleman();
  auto mx = dynamic_cast<net::default_multiplexer*>(&mm.backend());
  if (!mx)
    return caf::make_error(caf::sec::feature_disabled,
                           "guarded publishing needs CAF's default network backend");
  // Binding touches no event loop (CAF's middleman actor does it in its own thread too); the
  // broker starts accepting once it has the doorman.
  auto fd = net::new_tcp_acceptor_impl(port, host.empty() ? nullptr : host.c_str(), true);
  if (!fd) return std::move(fd.error());
  // TLS is the actor system's: on when its OpenSSL module is loaded (tls_config.hpp).
  auto report = std::make_shared<const refusal_handler>(rate_limited(std::move(on_refused)));
  auto guard = caf_port_guard::make(sys, *mx, limits, *report);
  caf::io::doorman_ptr doorman = caf::make_counted<guarded_doorman>(
    *mx, *fd, std::move(report), sys.has_openssl_manager(), std::move(guard));
  auto bound = doorman->port();
  // The BASP broker exists from the actor system's start on: looking it up only reads the
  // middleman's map of named brokers.
  auto basp_broker = mm.named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::anon_send(basp_broker, caf::publish_atom::value, std::move(doorman), bound,
                 std::move(whom), std::move(sigs));
  return bound;
}

} // namespace actorps
