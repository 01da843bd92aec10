// The dialling end of a data connection over mutual TLS, for link_socket's blocking callers: one
// thread sending while another receives (the worker's shard proxy and its reader thread). An
// OpenSSL session must not be entered by two threads at once, so every call into it holds a
// mutex, and the waiting is done outside it: the socket is non-blocking, and a call that cannot
// move bytes now polls the socket for what the session asked for (readable or writable).
#pragma once

#include "actors/tls/tls_files.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace actorps {

class tls_session;

class tls_channel {
public:
  /// A session dialling on the connected socket `fd` (made non-blocking; it stays the caller's)
  /// with this process's TLS files. Throws std::runtime_error when they cannot be loaded.
  tls_channel(const tls_files& files, int fd);
  ~tls_channel();

  enum class status { ok, timeout, failed };

  /// Completes the handshake within `timeout`; on failure `why` holds OpenSSL's reason.
  status handshake(std::chrono::milliseconds timeout, std::string& why);
  /// The server's certificate CN ("ps:0"), after the handshake.
  std::string peer_common_name() const;

  /// Sends all `n` bytes, waiting as long as the socket stays full.
  status send_all(const void* data, std::size_t n, std::string& why);
  /// Receives exactly `n` bytes; `timeout` bounds each wait for the peer's next bytes (0: none).
  status receive_all(void* data, std::size_t n, std::chrono::milliseconds timeout, std::string& why);

private:
  /// Sends (`sending`) or receives all `n` bytes at `p`, waiting at most `timeout_ms` (-1:
  /// forever) each time the socket is not ready.
  status transfer(char* p, std::size_t n, bool sending, int timeout_ms, std::string& why);
  /// Waits until the socket is ready for what the session last asked; false on timeout.
  bool wait(bool for_write, int timeout_ms) const;

  int fd_;
  mutable std::mutex mutex_;
  std::unique_ptr<tls_session> session_;
};

} // namespace actorps
