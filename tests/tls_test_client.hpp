// An intruder of the TLS tests: a TLS client of OpenSSL's with no certificate at all that trusts
// the cluster's CA.
#pragma once

#include "loopback_connect.hpp"

#include <doctest/doctest.h>

#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace actorps::test {

/// Connects to 127.0.0.1:`port`, completes its side of the handshake (TLS 1.3 ends there before
/// the server has checked it), sends `size` bytes from `first` and tries to read an answer,
/// waiting at most `bound_s` seconds. Returns its local port, and whether the server let it
/// read anything (it must not).
inline std::pair<uint16_t, bool> tls_client_without_certificate(uint16_t port, const std::string& ca,
                                                                 const void* first, std::size_t size,
                                                                 long bound_s = 10) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  REQUIRE(ctx);
  REQUIRE(SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) == 1);
  int fd = connect_loopback(port, bound_s);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  bool read_something = false;
  if (SSL_connect(ssl) == 1) {
    SSL_write(ssl, first, static_cast<int>(size));
    char buf[64];
    read_something = SSL_read(ssl, buf, sizeof buf) > 0;
  }
  SSL_free(ssl);
  ::close(fd);
  SSL_CTX_free(ctx);
  return {ntohs(local.sin_port), read_something};
}

} // namespace actorps::test
