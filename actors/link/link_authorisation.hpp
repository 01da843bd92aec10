// Who may ask what on the data link, once TLS has proven who the peer is: its certificate's CN
// names its task (scripts/make_certs.sh). Worker i may push and pull only as worker i — both the
// frame's `a` (a plain pull's worker) and the worker field of a Push or Pull payload are checked
// — and may take snapshots; the evaluator and the chief may take snapshots only; no other task
// (a ps, a name outside the cluster's roles) may ask anything. A snapshot changes nothing and
// reveals no more than a pull, hence any client role may take one.
#pragma once

#include "actors/link/link_socket.hpp"

#include <caf/error.hpp>

#include <string>

namespace actorps {

/// none when the peer named `identity` ("worker:1") may make the request of `kind` with frame
/// argument `a` and `payload`; else errc::not_authorised saying why (or errc::malformed_message
/// when the payload cannot be read to tell which worker it speaks for).
caf::error authorise_link_request(const std::string& identity, frame_kind kind, int64_t a,
                                  const wire_buffer& payload);
/// As authorise_link_request for a push_pull whose push says it comes from `worker`, read from
/// its first bytes while the rest arrives (arriving_push.hpp).
caf::error authorise_link_push(const std::string& identity, int32_t worker);

} // namespace actorps
