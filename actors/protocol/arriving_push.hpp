// A push_pull read while its bytes arrive (request_progress.hpp): its structure decoded from the
// bytes that are in, without reading one that is not.
//
// A worker's push (encode_push_by_reference) has all of its structure in the segment table and
// segment 0, which come first; the later segments are its blocks' values. But Cap'n Proto follows
// pointers wherever a message puts them, and a hand-made push may put a landing pad, a list or
// its root in a later segment, whose bytes the link may still be writing (from another thread,
// when the shard runs on CAF's scheduler). So the later segments are read from stand-ins: a
// read-only region of zeros of the same sizes. Structure placed there reads as null (an empty
// list, a block without values), and the blocks' value pointers are moved back to where their
// bytes arrive. Once the push is whole, `check_read_early` tells whether it reads the same.
#pragma once

#include "actors/protocol/wire.hpp"

#include <caf/error.hpp>

#include <cstddef>
#include <optional>
#include <vector>

namespace actorps {

struct arriving_push {
  push_view push;                 ///< fp32 blocks, pointing where their values arrive in the buffer
  std::vector<std::size_t> ends;  ///< where each block's values end, in the buffer's bytes
};

/// Where the structure of `buf` (its segment table and segment 0) ends once `arrived` bytes of it
/// are in: 0 while it is not all in, or when the message is not laid out as a push built by
/// reference (one segment, or a gathered buffer of this process), which is then read whole.
std::size_t arrived_structure(const wire_buffer& buf, std::size_t arrived);

/// The push in `buf`, read from its first `arrived` bytes alone; nullopt when it is to be read
/// whole instead: its structure is not all in, its segments do not fill the buffer, it is bf16,
/// or it is malformed (read whole, it is refused then, and counted once).
std::optional<arriving_push> read_arriving_push(const wire_buffer& buf, std::size_t arrived);

/// Once `whole` has all its bytes: an error (malformed_message) unless it decodes to `early`, the
/// push read from its first bytes — the same fields, the same blocks at the same places, no
/// sparse rows or keys. A push whose structure lay past segment 0 reads differently.
caf::error check_read_early(const push_view& early, const wire_buffer& whole);

} // namespace actorps
