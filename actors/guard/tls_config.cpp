#include "actors/guard/tls_config.hpp"

#include "actors/protocol/log.hpp"

#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

#include <atomic>

namespace actorps {

void configure_tls(caf::actor_system_config& cfg, const tls_files& files) {
  if (!files.enabled()) return;
  cfg.load<caf::openssl::manager>();
  // Where tls_session finds them; the module's presence is what turns TLS on
  // (guarded_publish.cpp, connect.cpp). The module's own sessions are not used (tls_session.hpp).
  cfg.openssl_certificate = files.cert;
  cfg.openssl_key = files.key;
  cfg.openssl_cafile = files.ca;
  // Off by default in CAF 0.17; when on, the BASP broker dials peers over plain TCP.
  cfg.set("middleman.enable-automatic-connections", false);
}

tls_files configured_tls(const caf::actor_system_config& cfg) {
  return {cfg.openssl_certificate, cfg.openssl_key, cfg.openssl_cafile};
}

void warn_unauthenticated(const std::string& who) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  log_line(log_level::warn, who,
           "NO TLS: this cluster is unauthenticated and unencrypted; anyone who can reach its "
           "ports can control the run (join as a task, read or replace the parameters, write "
           "checkpoints). Give every task --tls-cert, --tls-key and --tls-ca "
           "(scripts/make_certs.sh)");
}

} // namespace actorps
