// The bytes of one non-blocking server-side connection, as the data link server's event loop
// reads and writes them. A plain socket is one implementation; a TLS session (tls_stream.hpp:
// OpenSSL's SSL_read/SSL_write on the same non-blocking socket) is the other, without reshaping
// the loop: that is why a read may ask to wait for writability (a TLS handshake) and a write for
// readability, why a read may end in `refused` (the peer failed the handshake), and why a
// stream may hold bytes it has read from the socket but not handed out (`buffered`), which
// epoll cannot see.
#pragma once

#include <sys/uio.h>

#include <cerrno>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

class byte_stream {
public:
  enum class outcome {
    progress,    ///< `bytes` moved (> 0)
    would_block, ///< nothing moved now: wait for `wait_for_write` ? writability : readability
    closed,      ///< the peer closed (a read only)
    failed,      ///< the connection broke; `error` is the errno
    refused,     ///< the peer failed authentication (a TLS handshake): failure() says why
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
  /// The same, with the descriptor `fd` beside the first byte (SCM_RIGHTS on a local socket; a
  /// stream that cannot carry one fails with EOPNOTSUPP). The descriptor stays the caller's.
  virtual result write_with_descriptor(const iovec*, int, int) {
    return {outcome::failed, 0, EOPNOTSUPP, false};
  }
  /// The descriptor the event loop watches.
  virtual int fd() const = 0;

  /// Whether the peer proved who it is (a verified certificate): peer_identity() names it then.
  virtual bool authenticated() const { return false; }
  /// The authenticated peer's name (its certificate's CN, "worker:1"); "" when not authenticated.
  virtual std::string peer_identity() const { return {}; }
  /// Bytes already taken from the socket and not yet read: a read now makes progress although
  /// the socket may never become readable again.
  virtual bool buffered() const { return false; }
  /// Why the last read ended in `refused` or `failed`, when the stream knows more than errno.
  virtual std::string failure() const { return {}; }
  /// Descriptors that came with the bytes read so far (SCM_RIGHTS on a local socket), now the
  /// caller's; a stream holds at most max_held_descriptors (closing the rest) and closes what
  /// nobody took when it ends.
  virtual std::vector<int> take_descriptors() { return {}; }
  static constexpr std::size_t max_held_descriptors = 3;  // shm_offer: two rings, an arena
};

/// A connected socket, made non-blocking; closes it on destruction.
std::unique_ptr<byte_stream> make_socket_stream(int fd);

} // namespace actorps
