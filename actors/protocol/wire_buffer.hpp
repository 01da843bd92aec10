// The one payload type that crosses actor boundaries: one Cap'n Proto message.
//
// A wire_buffer is one Cap'n Proto message in flat-array form (segment table + one segment),
// immutable and shared: copying it shares the bytes. Inside a process CAF passes it by
// reference; across processes the middleman ships its bytes in one bulk copy (inspect below
// never serialises element by element). Encoders build the message directly inside the buffer
// that travels, so the float data is copied exactly once; decoders return views whose float
// pointers point into the buffer (no copy) and stay valid while the buffer lives.
#pragma once

#include "actors/protocol/errors.hpp"
#include "actors/ps/shared_bytes.hpp"

#include <caf/deserializer.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/serializer.hpp>

#include <capnp/common.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace actorps {

class wire_buffer {
public:
  /// One contiguous run of a message's bytes as they go on the wire.
  struct piece {
    const void* data;
    std::size_t bytes;
  };

  /// A message built by reference (encode_push_by_reference, ...): `head` holds the segment
  /// table followed by segment 0 (the structure; head_words in all), `external` the other
  /// segments, which point at the float blocks where they lie, in memory that `keep` keeps
  /// alive (when the caller shares its ownership) and that must not change while the buffer
  /// lives. Sent as head then each external segment, it is the same stream of bytes a flat
  /// buffer of the message holds, so the receiver cannot tell the two apart.
  struct gathered {
    std::shared_ptr<capnp::word[]> head;
    std::size_t head_words = 0;
    std::size_t table_words = 0;
    std::vector<kj::ArrayPtr<const capnp::word>> external;
    std::shared_ptr<const void> keep;
  };

  wire_buffer() = default;

  /// Takes `storage`, of which the first `size_words` words hold the message. Only the creator
  /// (an encoder, the deserializer) writes to it, before the buffer is shared.
  wire_buffer(std::shared_ptr<capnp::word[]> storage, std::size_t size_words)
    : words_(std::move(storage)), size_(size_words) {}

  explicit wire_buffer(std::shared_ptr<const gathered> parts);

  /// The message whose bytes `bytes` shares (share() gave them): the same bytes, not copied,
  /// when they lie on whole words as share() leaves them; else a copy.
  explicit wire_buffer(const shared_bytes& bytes);

  /// The message's bytes, shared with whoever holds them (flat(): a copy only when gathered),
  /// for a public type that carries a message (run_summary::final_parameters).
  shared_bytes share() const;

  /// Uninitialised storage for `n` words (value-initialising would cost a pass over a payload
  /// that the encoder overwrites anyway).
  static std::shared_ptr<capnp::word[]> allocate(std::size_t n) {
    return std::shared_ptr<capnp::word[]>(new capnp::word[n]);
  }

  /// Whether the message's segments lie apart (see gathered); words() and bytes() are null then.
  bool is_gathered() const { return gathered_ != nullptr; }
  const gathered* parts() const { return gathered_.get(); }

  const capnp::word* words() const { return words_.get(); }
  /// The message's size on the wire, flat or gathered.
  std::size_t size_words() const { return gathered_ ? size_ : words_ ? size_ : 0; }
  std::size_t size_bytes() const { return size_words() * sizeof(capnp::word); }
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(words()); }

  /// The bytes in wire order: one piece for a flat buffer, the head and each external segment
  /// for a gathered one (what a sender hands to sendmsg, an iovec each).
  std::vector<piece> pieces() const;

  /// The same message in one flat buffer: itself when flat, else a copy (counted in
  /// copied_payload_bytes), for the few users that need contiguous bytes.
  wire_buffer flat() const;

  /// A buffer holding arbitrary bytes (zero-padded to whole words): for tests that feed
  /// malformed payloads to a shard.
  static wire_buffer from_bytes(const void* data, std::size_t n);

private:
  std::shared_ptr<capnp::word[]> words_;
  std::size_t size_ = 0;
  std::shared_ptr<const gathered> gathered_;
};

/// Payload bytes (floats, keys) this process's own code has copied while encoding messages and
/// scattering replies: every memcpy of payload in the codecs (wire_message.hpp) adds to it. The
/// transport benchmark reads it around its round trips ("bytes copied per round trip", counted,
/// not estimated); the kernel's copies (send, receive) and TLS's encryption are not ours and not
/// counted.
inline std::atomic<uint64_t> copied_payload_bytes{0};

/// Upper bound on a buffer accepted from the network.
inline constexpr std::size_t max_wire_bytes = std::size_t(1) << 31;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wire_buffer& x) {
  if constexpr (std::is_base_of<caf::serializer, Inspector>::value) {
    std::size_t n = x.size_bytes();
    if (auto err = f.begin_sequence(n)) return err;
    for (const auto& p : x.pieces())  // a gathered buffer leaves as the flat one would
      if (p.bytes > 0)
        if (auto err = f.apply_raw(p.bytes, const_cast<void*>(p.data))) return err;
    return f.end_sequence();
  } else if constexpr (std::is_base_of<caf::deserializer, Inspector>::value) {
    std::size_t n = 0;
    if (auto err = f.begin_sequence(n)) return err;
    if (n % sizeof(capnp::word) != 0 || n > max_wire_bytes)
      return make_error(errc::malformed_message, "wire buffer of " + std::to_string(n) + " bytes");
    auto words = wire_buffer::allocate(n / sizeof(capnp::word));
    if (n > 0)
      if (auto err = f.apply_raw(n, words.get())) return err;
    x = wire_buffer{std::move(words), n / sizeof(capnp::word)};
    return f.end_sequence();
  } else {
    auto n = x.size_bytes();
    return f(caf::meta::type_name("wire_buffer"), n);
  }
}

/// shared_bytes travel as the message they hold (share(), wire_buffer(shared_bytes)).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shared_bytes& x) {
  wire_buffer buffer{x};
  if constexpr (std::is_base_of<caf::deserializer, Inspector>::value) {
    auto err = inspect(f, buffer);
    x = buffer.share();
    return err;
  } else {
    return inspect(f, buffer);
  }
}

} // namespace actorps
