// Reads a record taken from shared memory (shm_inbox::take: one flat run, or a record of pieces
// naming blocks in the peer's arena) front to back, as a socket would be read: the next bytes
// into the places asked for. This copy out of the record is the one copy of ours that a reply
// over shared memory costs; the caller counts it as it sees fit.
#pragma once

#include "actors/protocol/wire.hpp"

#include <sys/uio.h>

#include <cstddef>
#include <vector>

namespace actorps {

class record_reader {
public:
  record_reader() = default;
  explicit record_reader(wire_buffer record);

  /// Copies the record's next bytes into `parts`, in order. False when the record ends first
  /// (a peer's record shorter than the frame says: malformed); what was copied stays copied.
  bool read(const iovec* parts, int count);

  /// Whether a record is held, even an empty one (else there is nothing to read).
  bool holds() const { return held_; }
  /// The bytes the record names (a record of pieces is shorter in the ring).
  std::size_t size_bytes() const { return record_.size_bytes(); }
  /// Lets the record go: the peer may reuse its place in the ring (and the blocks it names).
  void release();

private:
  wire_buffer record_;
  std::vector<wire_buffer::piece> pieces_;
  std::size_t piece_ = 0;  // the piece being read
  std::size_t at_ = 0;     // bytes of it read
  bool held_ = false;
};

} // namespace actorps
