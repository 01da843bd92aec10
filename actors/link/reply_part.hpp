// A reply sent in parts (frame_kind::reply_part, reply_stream.hpp): the writer's frame payload
// and the reader that turns a reply's parts back into one stream of its bytes.
//
// A part's payload is laid out as a Cap'n Proto message would be: a segment table, segment 0
// (the part's head: where in the reply it starts, and the reply's size) and then the part's
// bytes as the segments they lie in (the reply's float blocks, by reference). A shared-memory
// link therefore carries it as any message built by reference (shm_region.hpp): the blocks named
// in the shard's arena, not copied, and the worker copies each straight into its parameters.
//
//   reply:  | table | structure | block 0 | block 1 | block 2 | ... | block n-1 |
//   parts:  |<------------ part 1 ------------>|<---- part 2 --->| ... |<- last ->|
//
// The reader checks every part against the stream so far (outside input): the parts of one
// reply adjoin from its first byte to its last, all name the same size, none is empty. Between
// two parts it may meet a whole answer to another request (a held pull released meanwhile),
// which it hands to the caller; a reply or failure for the same request ends the parts early:
// that is the answer (the shard refused the push or its update after sending some blocks).
#pragma once

#include "actors/link/link_socket.hpp"
#include "actors/link/receive_in_place.hpp"
#include "actors/link/record_reader.hpp"
#include "actors/link/shm_region.hpp"

#include <functional>
#include <optional>

namespace actorps {

/// Segment 0 of a part.
struct reply_part_head {
  uint64_t from = 0;   ///< the part's first byte in the reply
  uint64_t total = 0;  ///< the reply's bytes
};

/// The payload of a reply_part frame carrying bytes [from, to) of `reply` (whole words, to >
/// from), built by reference: it keeps `reply` (and so the lease of the buffer it lies in).
wire_buffer make_reply_part(const wire_buffer& reply, std::size_t from, std::size_t to);

/// Reads the parts of one reply from a link (and its shared memory, for parts in a region) as
/// the stream of the reply's bytes: its read() serves receive_parameters_into's read_parts.
class reply_part_reader {
public:
  /// Handles, whole, a frame for another request met between two parts; an error ends the link.
  using other_frame = std::function<caf::error(const frame_header&)>;

  /// A reply of more than `max_total` bytes is refused as malformed at its first part.
  reply_part_reader(link_socket& link, const shm_inbox* inbox, other_frame other,
                    uint64_t max_total = max_wire_bytes);

  /// Starts with the first part, whose header `h` has been received.
  caf::error begin(const frame_header& h);
  uint64_t total() const { return total_; }

  /// Reads exactly the bytes of `parts`, in order, from the parts as they come. Returns
  /// errc::malformed_message when the parts do not form the reply, or the link's error; when a
  /// reply or failure for the request ends the parts, an error and ended_by() says which.
  caf::error read(iovec* parts, int count);

  /// The header of the reply or failure for the same request that came instead of the next
  /// part: the caller handles that frame as the answer.
  const std::optional<frame_header>& ended_by() const { return ended_by_; }

private:
  caf::error open(const frame_header& h, bool first);
  caf::error next_part();
  caf::error read_source(iovec* parts, int count);

  link_socket& link_;
  const shm_inbox* inbox_;
  other_frame other_;
  uint64_t max_total_;
  uint64_t id_ = 0;
  uint64_t total_ = 0;
  uint64_t consumed_ = 0;  // reply bytes read so far
  uint64_t left_ = 0;      // bytes of the current part not read yet
  record_reader record_;  // a part in shared memory (else it is read off the socket)
  std::vector<iovec> batch_;  // read()'s places within one part, kept for the next call
  std::optional<frame_header> ended_by_;
};

/// A reply whose first header `h` has been received off `link` (no shared memory) — a reply,
/// or the first of its parts — read straight into `flat` (receive_in_place.hpp). For a client
/// with one request in flight, where nothing else comes between two parts.
caf::expected<shard_parameters_view> receive_reply_into(link_socket& link, const frame_header& h,
                                                        const block_layout& layout, float* flat,
                                                        wire_buffer& structure);

} // namespace actorps
