#include "actors/tls/tls_session.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <csignal>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

namespace actorps {

namespace net = caf::io::network;

namespace {

/// OpenSSL frees its global state at exit, from an atexit handler, unless its first
/// initialisation says not to. A detached CAF actor's thread (the shard proxy's, which writes
/// TLS records) can still be ending then: CAF 0.17's actor system waits only until such a thread
/// says it is done, and the thread then frees its OpenSSL per-thread state as it exits, which
/// the handler has already freed: "double free or corruption" after every test had passed, in
/// 1 of ~500 runs of a TLS test under load (likely also the SIGSEGV seen once after a passed TLS
/// test on a 16-core machine). So OpenSSL is initialised here, before main, without that
/// handler; the process's exit frees it all anyway.
[[maybe_unused]] const bool openssl_without_atexit =
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr) == 1;

/// OpenSSL's reasons queued on this thread, oldest first, without repeats; the queue emptied.
std::string queued_reasons() {
  std::string out;
  while (auto code = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(code);
    std::string text = reason ? reason : "error " + std::to_string(code);
    if (out.find(text) == std::string::npos) out += (out.empty() ? "" : "; ") + text;
  }
  return out;
}

/// The context of a set of files, made once per process (loading the files for every
/// connection would read the disk on the network thread). Never freed: it lives as long as the
/// process may open connections.
SSL_CTX* context_for(const tls_files& files) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, std::string, std::string>, SSL_CTX*> made;
  std::lock_guard<std::mutex> guard(mutex);
  auto& ctx = made[{files.cert, files.key, files.ca}];
  if (ctx) return ctx;
  // OpenSSL writes to sockets with write(2): a peer gone would raise SIGPIPE and end the process.
  // CAF's own writes use MSG_NOSIGNAL; these cannot, so the signal is ignored (a closed socket
  // then shows as EPIPE, a failed write, as for CAF's own).
  std::signal(SIGPIPE, SIG_IGN);
  SSL_CTX* fresh = SSL_CTX_new(TLS_method());
  auto fail = [&](const std::string& what) {
    auto why = queued_reasons();
    if (fresh) SSL_CTX_free(fresh);
    throw std::runtime_error("TLS: " + what + (why.empty() ? "" : ": " + why));
  };
  if (!fresh) fail("cannot create a context");
  SSL_CTX_set_min_proto_version(fresh, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(fresh, files.cert.c_str()) != 1)
    fail("cannot load " + files.cert);
  if (SSL_CTX_use_PrivateKey_file(fresh, files.key.c_str(), SSL_FILETYPE_PEM) != 1
      || SSL_CTX_check_private_key(fresh) != 1)
    fail("cannot load " + files.key);
  if (SSL_CTX_load_verify_locations(fresh, files.ca.c_str(), nullptr) != 1)
    fail("cannot load " + files.ca);
  SSL_CTX_set_verify(fresh, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  if (SSL_CTX_set_cipher_list(fresh, "HIGH:!aNULL:!MD5") != 1) fail("cannot set the ciphers");
  // Partial writes match the stream's byte counting; the stream may hand a retried write from
  // another address once it has moved what is left of its buffer.
  SSL_CTX_set_mode(fresh, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // No session resumption between tasks: no tickets to send after each handshake.
  SSL_CTX_set_num_tickets(fresh, 0);
  ctx = fresh;
  return ctx;
}

} // namespace

tls_session::tls_session(const tls_files& files, net::native_socket fd, bool accepting)
  : ssl_(SSL_new(context_for(files))) {
  if (!ssl_) throw std::runtime_error("TLS: cannot create a session: " + queued_reasons());
  SSL_set_fd(ssl_, fd);
  if (accepting) SSL_set_accept_state(ssl_);
  else SSL_set_connect_state(ssl_);
}

tls_session::~tls_session() { SSL_free(ssl_); }

bool tls_session::established() const { return established_; }

bool tls_session::advance_handshake() {
  ERR_clear_error();
  auto ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    established_ = true;
    return true;
  }
  auto err = SSL_get_error(ssl_, ret);
  wants_write_ = err == SSL_ERROR_WANT_WRITE;
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return true;
  auto verdict = SSL_get_verify_result(ssl_);
  failure_ = queued_reasons();
  if (verdict != X509_V_OK)
    failure_ += std::string(failure_.empty() ? "" : ": ") + X509_verify_cert_error_string(verdict);
  if (failure_.empty()) failure_ = "the peer closed the connection during the TLS handshake";
  return false;
}

net::rw_state tls_session::outcome(int ret, size_t& result) {
  if (ret > 0) {
    result = static_cast<size_t>(ret);
    return net::rw_state::success;
  }
  result = 0;
  auto err = SSL_get_error(ssl_, ret);
  wants_write_ = err == SSL_ERROR_WANT_WRITE;
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return net::rw_state::success;
  failure_ = queued_reasons();
  if (failure_.empty())
    failure_ = err == SSL_ERROR_ZERO_RETURN ? "closed by the peer" : "connection lost";
  return net::rw_state::failure;
}

bool tls_session::flush_early() {
  while (!early_.empty()) {
    ERR_clear_error();
    size_t sent = 0;
    auto state = outcome(SSL_write(ssl_, early_.data(), static_cast<int>(early_.size())), sent);
    if (state == net::rw_state::failure) return false;
    if (sent == 0) return true;  // the socket is full: the rest goes with the next call
    early_.erase(early_.begin(), early_.begin() + static_cast<std::ptrdiff_t>(sent));
  }
  return true;
}

net::rw_state tls_session::read_some(size_t& result, void* buf, size_t len) {
  result = 0;
  if (!established()) {
    if (!advance_handshake()) return net::rw_state::failure;
    if (!established()) return net::rw_state::success;  // waits for the peer's next bytes
  }
  if (!flush_early()) return net::rw_state::failure;
  if (len == 0) return net::rw_state::success;
  ERR_clear_error();
  auto state = outcome(SSL_read(ssl_, buf, static_cast<int>(len)), result);
  read_starved_ = state == net::rw_state::success && result == 0;
  return state;
}

net::rw_state tls_session::write_some(size_t& result, const void* buf, size_t len) {
  result = 0;
  if (!established()) {
    if (!advance_handshake()) return net::rw_state::failure;
    if (!established()) {
      // An empty write (the scribe's first) only drives the handshake; bytes wait in early_.
      if (len == 0) return net::rw_state::indeterminate;
      auto bytes = static_cast<const char*>(buf);
      early_.insert(early_.end(), bytes, bytes + len);
      result = len;
      return net::rw_state::success;
    }
  }
  if (!flush_early()) return net::rw_state::failure;
  if (!early_.empty()) return net::rw_state::success;  // the socket is full: later
  if (len == 0) return net::rw_state::indeterminate;
  ERR_clear_error();
  return outcome(SSL_write(ssl_, buf, static_cast<int>(len)), result);
}

bool tls_session::must_read_more(size_t threshold) const {
  return static_cast<size_t>(SSL_pending(ssl_)) >= threshold;
}

void tls_session::tune_for_bulk() {
  SSL_set_options(ssl_, SSL_OP_ENABLE_KTLS);
  SSL_set_read_ahead(ssl_, 1);
  SSL_set_default_read_buffer_len(ssl_, 256 * 1024);
}

bool tls_session::holds_unread() const {
  // SSL_has_pending counts the raw bytes read ahead too; a part of a record among them waits
  // for the socket, which says so (the read that found it starved).
  return SSL_pending(ssl_) > 0 || (SSL_has_pending(ssl_) == 1 && !read_starved_);
}

std::string tls_session::peer_common_name() const {
  if (!established()) return "";
  X509* cert = SSL_get1_peer_certificate(ssl_);
  if (!cert) return "";
  char cn[256] = {};
  auto name = X509_get_subject_name(cert);
  auto got = name ? X509_NAME_get_text_by_NID(name, NID_commonName, cn, sizeof cn) : -1;
  X509_free(cert);
  return got < 0 ? "" : cn;
}

} // namespace actorps
