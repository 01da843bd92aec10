// The server side of a data connection over mutual TLS: a byte_stream (byte_stream.hpp) on a
// tls_session, so the data link server's event loop serves TLS clients as it serves plain ones.
// The handshake runs inside the loop, a step each time the socket is ready, and never blocks it;
// until it is through, a read moves no bytes, and a peer that fails it (no certificate, one not
// issued by the cluster's CA, not TLS at all) reads as `refused` with OpenSSL's reason, before
// any frame of it is read. Afterwards the peer's certificate CN is its identity.
#pragma once

#include "actors/link/byte_stream.hpp"
#include "actors/tls/tls_files.hpp"

#include <memory>

namespace actorps {

/// A TLS stream accepting on the connected socket `fd` (made non-blocking; closed with the
/// stream) with the process's TLS files. Throws std::runtime_error when the files cannot be
/// loaded (they were checked at start: check_tls_files).
std::unique_ptr<byte_stream> make_tls_stream(const tls_files& files, int fd);

} // namespace actorps
