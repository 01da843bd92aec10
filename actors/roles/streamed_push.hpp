// The shard's one push_pull (push_request.hpp), and a push applied as it arrives
// (request_progress.hpp): its structure read from the bytes that are in (arriving_push.hpp),
// each dense block written by the shard's dense_update once its values are in, while the data
// link reads the rest; answered as a whole push is.
#pragma once

#include "actors/roles/shard_state.hpp"
#include "actors/protocol/push_request.hpp"

namespace actorps::shard_internals {

/// (push_pull, request): a whole push is answered as on_push_pull answers it (its reply ahead
/// through the request's stream when it has one); a push still arriving is applied as it does
/// when it can be, else declined (the data link asks again once it is whole), and one the link
/// read whole first is an ordinary push_pull; a notice that more of the push being applied has
/// arrived, or never will, moves it on and is answered by nobody.
caf::result<wire_buffer> on_push_request(self_ptr self, const push_request& request);

} // namespace actorps::shard_internals
