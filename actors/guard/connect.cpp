#include "actors/guard/connect.hpp"

#include "actors/guard/tls_middleman.hpp"
#include "actors/protocol/errors.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <algorithm>

namespace actorps {

namespace {

using retry_atom = caf::atom_constant<caf::atom("retry")>;
using tls_failed_atom = caf::atom_constant<caf::atom("tlsfailed")>;

constexpr auto first_backoff = std::chrono::milliseconds(50);
constexpr auto max_backoff = std::chrono::milliseconds(1000);

struct connector_state {
  static inline const char* name = "connector";
  caf::response_promise promise;
  std::chrono::milliseconds backoff = first_backoff;
  caf::timestamp deadline;
  caf::error last_error;
  int attempts = 0;
  /// With TLS: the middleman actor that dials (tls_middleman.hpp), and why the last TLS
  /// handshake failed, if one did.
  caf::io::middleman_actor tls_dialer;
  std::string tls_failure;
};

caf::behavior connector(caf::stateful_actor<connector_state>* self, host_port addr,
                        std::set<std::string> expected_ifs, caf::timespan timeout) {
  auto fail = [=](const std::string& why, caf::sec code = caf::sec::cannot_connect_to_node) {
    self->state.promise.deliver(caf::make_error(code, "cannot reach " + addr.text() + ": " + why));
    self->quit();
  };
  auto attempt = [=] {
    ++self->state.attempts;
    // Over TLS when the system has CAF's OpenSSL module (tls_config.hpp): the dialer hands the
    // BASP broker a TLS connection that verifies the peer against the cluster's CA.
    auto mm = self->state.tls_dialer ? self->state.tls_dialer
                                     : self->system().middleman().actor_handle();
    self->request(mm, std::chrono::seconds(10), caf::connect_atom::value, addr.host, addr.port)
      .then(
        [=](const caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>& ifs) {
          if (!ptr) return fail("no actor is published there");
          if (ifs.empty() != expected_ifs.empty()
              || !std::includes(ifs.begin(), ifs.end(), expected_ifs.begin(), expected_ifs.end()))
            return fail("the actor there speaks another message interface",
                        caf::sec::unexpected_actor_messaging_interface);
          self->state.promise.deliver(std::move(ptr));
          self->quit();
        },
        [=](caf::error& err) {
          auto& st = self->state;
          st.last_error = err;
          if (caf::make_timestamp() + st.backoff > st.deadline)
            return fail("gave up after " + std::to_string(st.attempts) + " attempts ("
                        + describe(err)
                        + (st.tls_failure.empty() ? "" : "; TLS handshake: " + st.tls_failure)
                        + ")");
          self->delayed_send(self, st.backoff, retry_atom::value);
          st.backoff = std::min(st.backoff * 2, max_backoff);
        });
  };
  if (self->system().has_openssl_manager()) {
    auto me = caf::actor_cast<caf::weak_actor_ptr>(self->ctrl());
    self->state.tls_dialer = spawn_tls_middleman(self->system(), [me](const std::string& why) {
      if (auto to = caf::actor_cast<caf::actor>(me.lock()))
        caf::anon_send(to, tls_failed_atom::value, why);
    });
    self->attach_functor([dialer = self->state.tls_dialer] {
      caf::anon_send_exit(dialer, caf::exit_reason::user_shutdown);
    });
  }
  return {
    [=](tls_failed_atom, const std::string& why) { self->state.tls_failure = why; },
    [=](caf::connect_atom) {
      self->state.promise = self->make_response_promise();
      self->state.deadline = caf::make_timestamp() + timeout;
      attempt();
      return self->state.promise;
    },
    [=](retry_atom) { attempt(); },
  };
}

} // namespace

caf::actor spawn_connector(caf::actor_system& sys, host_port addr,
                           std::set<std::string> expected_ifs, caf::timespan timeout) {
  return sys.spawn(connector, std::move(addr), std::move(expected_ifs), timeout);
}

} // namespace actorps
