// The bytes of one non-blocking server-side connection, as the data link server's event loop
// reads and writes them. A plain socket is one implementation; a TLS session (OpenSSL's
// SSL_read/SSL_write on the same non-blocking socket) is meant to be another without reshaping
// the loop: that is why a read may ask to wait for writability (a TLS renegotiation or
// handshake) and a write for readability.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <memory>

namespace actorps {

class byte_stream {
public:
  enum class outcome {
    progress,    ///< `bytes` moved (> 0)
    would_block, ///< nothing moved now: wait for `wait_for_write` ? writability : readability
    closed,      ///< the peer closed (a read only)
    failed,      ///< the connection broke; `error` is the errno
  };
  struct result {
    outcome what = outcome::progress;
    std::size_t bytes = 0;
    int error = 0;
    bool wait_for_write = false;
  };

  virtual ~byte_stream() = default;

  /// Reads up to `n` bytes into `data`.
  virtual result read(void* data, std::size_t n) = 0;
  /// Writes from `parts` (gathered: a frame header and its payload in one system call).
  virtual result write(const iovec* parts, int count) = 0;
  /// The descriptor the event loop watches.
  virtual int fd() const = 0;
};

/// A connected socket, made non-blocking; closes it on destruction.
std::unique_ptr<byte_stream> make_socket_stream(int fd);

} // namespace actorps
