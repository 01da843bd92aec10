// One data connection as the server's event loop sees it: frames read incrementally (the header,
// then the payload straight into the wire_buffer the shard will use) and replies queued until
// the socket takes them (a header and its payload's pieces gathered in one sendmsg, no copy: a
// reply built by reference goes from the shard's parameters to the kernel). Knows
// nothing of epoll or of the shard; the server decides what a frame means.
#pragma once

#include "actors/link/byte_stream.hpp"
#include "actors/link/link_socket.hpp"

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

class link_connection {
public:
  link_connection(std::unique_ptr<byte_stream> stream, std::string peer);

  enum class read_status {
    frame,      ///< a whole frame is in `header` / `payload`
    blocked,    ///< no more bytes now
    too_large,  ///< `header` is read and valid but its payload is over the limit given; calling
                ///< again with a larger limit reads on
    bad_header, ///< `why` says what is wrong; nothing more can be read from this connection
    closed,     ///< the peer closed
    broken,     ///< the connection failed
    refused,    ///< the peer failed the TLS handshake: `why` says why; nothing was read
    partial,    ///< a push_pull's payload grew by `pause_after` bytes and more are due: see
                ///< partial_frame(); calling again reads on
  };

  /// Reads on towards the next frame. Its payload (at most `payload_limit` bytes) is allocated
  /// only once its header is read and checked; pages are touched only as its bytes arrive.
  /// With `pause_after`, a push_pull of at least twice that many bytes stops after every
  /// `pause_after` bytes of payload read (partial), so that the caller can hand on what is in.
  read_status read_frame(std::size_t payload_limit, frame_header& header, wire_buffer& payload,
                         std::string& why, std::size_t pause_after = 0);

  /// The header of a frame whose payload is being read (its header read, its payload not all
  /// yet), or null.
  const frame_header* partial_frame() const;
  /// Bytes of that payload read so far, and the payload itself: the buffer the whole frame will
  /// be read into, shared (only bytes below payload_read() are in).
  std::size_t payload_read() const { return payload_got_; }
  wire_buffer partial_payload() const;

  /// Queues a frame (the payload is shared, not copied) and a failure frame (text copied).
  void queue(frame_kind kind, uint64_t id, const wire_buffer& payload);
  void queue(const frame_header& h);  ///< a header alone (of a payload in shared memory, say)
  /// A header alone with the descriptor `fd` beside it (stays the caller's, open until sent).
  void queue(const frame_header& h, int fd);
  void queue_failure(uint64_t id, const caf::error& err);

  enum class write_status { done, blocked, broken };
  /// Writes queued frames until done or the socket is full.
  write_status flush();

  std::size_t unsent_bytes() const { return unsent_bytes_; }
  std::size_t unsent_frames() const { return out_.size(); }
  /// Replies wait to be written, or the last read waits for writability (a TLS stream's
  /// handshake or renegotiation): either way the loop watches for EPOLLOUT.
  bool wants_write() const { return read_wants_write_ || !out_.empty(); }
  bool read_wants_write() const { return read_wants_write_; }

  /// Bytes the stream has taken from the socket but not handed out (TLS): readable now, although
  /// epoll may never say so.
  bool buffered() const { return stream_->buffered(); }
  /// The peer's proven identity (its certificate's CN), once authenticated; see byte_stream.
  bool authenticated() const { return stream_->authenticated(); }
  std::string peer_identity() const { return stream_->peer_identity(); }

  /// Descriptors that came with the frames read (shm_offer), now the caller's.
  std::vector<int> take_descriptors() { return stream_->take_descriptors(); }

  int fd() const { return stream_->fd(); }
  const std::string& peer() const { return peer_; }

private:
  struct outgoing {
    frame_header header;
    wire_buffer payload;  // a reply's bytes, shared with whoever else holds them
    std::string text;     // a failure frame's context
    std::vector<wire_buffer::piece> pieces;  // the header, then the payload's or the text's
    int descriptor = -1;  // goes with the frame's first byte, in a write of its own
  };
  void push_back(outgoing f);

  std::unique_ptr<byte_stream> stream_;
  std::string peer_;
  // Reading: header_got_ of the header's 40 bytes, then payload_got_ of its payload.
  frame_header header_{};
  std::size_t header_got_ = 0;
  std::shared_ptr<capnp::word[]> storage_;
  std::size_t payload_got_ = 0;
  // Writing: the front frame's first sent_ bytes (header, then payload) are gone.
  std::deque<outgoing> out_;
  std::size_t sent_ = 0;
  std::size_t unsent_bytes_ = 0;
  bool read_wants_write_ = false;
};

} // namespace actorps
