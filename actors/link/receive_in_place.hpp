// A pull's reply read from the data link straight into the worker's parameters: the segment
// table and segment 0 (the message's structure) first, then every block's floats with one
// recvmsg, an iovec per block, each pointing at the block's place in the flat parameters. The
// reply must be laid out as the shard builds it by reference (encode_shard_parameters_by_
// reference: one segment per block that starts on a word and is a whole number of words, in
// list order); a block the shard copied into segment 0 is copied out (counted), and a reply
// laid out otherwise is received into a buffer and scattered, as before.
#pragma once

#include "actors/link/link_socket.hpp"
#include "actors/protocol/wire.hpp"

#include <functional>

namespace actorps {

/// Receives the payload of reply frame `h` (its header read already) into `flat`, laid out by
/// `layout`, and returns the decoded header (its blocks pointing into `flat`, or into
/// `structure` for a block that was copied). `structure` keeps the message's structure. A message that
/// does not decode is malformed_message; a broken link is the link's error. Either way `flat`
/// may hold part of the reply.
caf::expected<shard_parameters_view>
receive_parameters_into(link_socket& link, const frame_header& h, const block_layout& layout,
                        float* flat, wire_buffer& structure);

/// Reads exactly the bytes of `parts`, in order, from wherever the reply lies.
using read_parts = std::function<caf::error(iovec* parts, int count)>;

/// The same from any source of the reply's `size` bytes: a link's socket, or a record in shared
/// memory (shm_region.hpp) that `read` copies out of (and counts).
caf::expected<shard_parameters_view>
receive_parameters_into(const read_parts& read, uint64_t size, const block_layout& layout,
                        float* flat, wire_buffer& structure);

} // namespace actorps
