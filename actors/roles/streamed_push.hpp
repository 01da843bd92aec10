// A push_pull applied as it arrives (request_progress.hpp): its structure read from the bytes
// that are in (arriving_push.hpp), each dense block written by the shard's dense_update once its
// values are in, while the data link reads the rest; answered as a whole push is.
#pragma once

#include "actors/roles/shard_state.hpp"
#include "actors/protocol/reply_stream.hpp"
#include "actors/protocol/request_progress.hpp"

namespace actorps::shard_internals {

/// (push_pull, buf, stream, progress): a push still arriving is applied as it does when it can
/// be, else declined (the data link asks again once it is whole); one the link read whole
/// first is an ordinary push_pull.
caf::result<wire_buffer> on_arriving_push_pull(self_ptr self, const wire_buffer& buf,
                                               const reply_stream_ptr& stream,
                                               const request_progress_ptr& progress);

/// (push_progress, progress): more of the push being applied has arrived, or it never will.
void on_push_progress(self_ptr self, const request_progress_ptr& progress);

} // namespace actorps::shard_internals
