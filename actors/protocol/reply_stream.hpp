// Where a shard may send the reply to a push_pull ahead, in parts, while it still writes the
// update the reply carries: a shard's data link (link_hub.hpp) hands one with each push_pull it
// asks the shard (its push_request's reply_stream), so that a worker copies the first
// blocks of a large reply into its parameters while the shard applies the next ones (a
// 16 MiB push+pull pipelined rather than apply, then copy).
//
// The shard streams only a reply it knows the update will not change any more: the blocks
// applied so far, in the reply's own byte order, built by reference on the buffer the update is
// written into (which the reply's lease then keeps unchanged). When a later block refuses the
// push (a gradient beyond its bound) or the update (a parameter beyond its), the shard answers
// as without a stream — a failure, or a whole reply of the unchanged values — and that answer
// ends the parts already sent: the worker's parameters are then written again whole, or the
// call fails (and may have written part of them, as any failed call may).
#pragma once

#include "actors/protocol/wire_buffer.hpp"

#include <cstddef>
#include <memory>

namespace actorps {

class reply_stream {
public:
  virtual ~reply_stream() = default;
  /// Sends bytes [from, to) of `reply` (size_bytes() of them in all) now. Parts are sent in
  /// order and adjoin, the first from 0 and the last to the end; both ends are whole words.
  /// The reply's bytes in the range must not change afterwards.
  virtual void send_part(const wire_buffer& reply, std::size_t from, std::size_t to) = 0;
  /// Bytes per part the shard aims at (at block boundaries): a reply shorter than two parts
  /// is not streamed.
  virtual std::size_t part_bytes() const = 0;
};

using reply_stream_ptr = std::shared_ptr<reply_stream>;

} // namespace actorps
