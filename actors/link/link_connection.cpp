#include "actors/link/link_connection.hpp"

#include "actors/link/link_verbs.hpp"

#include <caf/message.hpp>

#include <algorithm>

namespace actorps {

link_connection::link_connection(std::unique_ptr<byte_stream> stream, std::string peer)
  : stream_(std::move(stream)), peer_(std::move(peer)) {}

link_connection::read_status link_connection::read_frame(std::size_t payload_limit,
                                                         frame_header& header,
                                                         wire_buffer& payload, std::string& why,
                                                         std::size_t pause_after) {
  using outcome = byte_stream::outcome;
  auto status_of = [&](const byte_stream::result& r) {
    if (r.what == outcome::would_block) {
      read_wants_write_ = r.wait_for_write;
      return read_status::blocked;
    }
    if (r.what == outcome::refused) {
      why = stream_->failure();
      return read_status::refused;
    }
    return r.what == outcome::closed ? read_status::closed : read_status::broken;
  };
  while (header_got_ < sizeof header_) {
    auto r = stream_->read(reinterpret_cast<char*>(&header_) + header_got_,
                           sizeof header_ - header_got_);
    if (r.what != outcome::progress) return status_of(r);
    header_got_ += r.bytes;
    if (header_got_ == sizeof header_) {
      why = check_header(header_);
      if (!why.empty()) return read_status::bad_header;
    }
  }
  if (header_.size > payload_limit) {
    header = header_;
    return read_status::too_large;
  }
  // A reply or failure is no request; the server refuses it by kind, its payload unread.
  // A payload in shared memory does not follow on the socket: the server takes it from there.
  // A hello's payload is a ticket (link_hub.hpp).
  const auto verb = verb_of(static_cast<frame_kind>(header_.kind));
  const bool hello = static_cast<frame_kind>(header_.kind) == frame_kind::hello;
  bool carries_buffer = !in_region(header_) && ((verb && verb->has_payload) || hello);
  if (carries_buffer && header_.size > 0) {
    if (!storage_) storage_ = wire_buffer::allocate(header_.size / sizeof(capnp::word));
    const bool pauses = pause_after > 0 && verb && verb->arrival == link_arrival::as_it_comes
                        && header_.size >= 2 * pause_after;
    const auto pause_at = payload_got_ + pause_after;
    while (payload_got_ < header_.size) {
      if (pauses && payload_got_ >= pause_at) return read_status::partial;
      // Pausing, no read goes past the pause, even when more is in: the bytes still on their
      // way are what the shard's work on these overlaps.
      auto want = header_.size - payload_got_;
      if (pauses) want = std::min(want, pause_at - payload_got_);
      auto r = stream_->read(reinterpret_cast<char*>(storage_.get()) + payload_got_, want);
      if (r.what != outcome::progress) return status_of(r);
      payload_got_ += r.bytes;
    }
    payload = wire_buffer{std::move(storage_), header_.size / sizeof(capnp::word)};
  } else {
    payload = wire_buffer{};
  }
  header = header_;
  header_got_ = 0;
  payload_got_ = 0;
  storage_.reset();
  read_wants_write_ = false;
  return read_status::frame;
}

const frame_header* link_connection::partial_frame() const {
  if (header_got_ < sizeof header_ || !storage_ || payload_got_ >= header_.size) return nullptr;
  return &header_;
}

wire_buffer link_connection::partial_payload() const {
  return wire_buffer{storage_, header_.size / sizeof(capnp::word)};
}

void link_connection::push_back(outgoing f) {
  f.pieces.insert(f.pieces.begin(), {&f.header, sizeof f.header});
  for (const auto& p : f.pieces) unsent_bytes_ += p.bytes;
  out_.push_back(std::move(f));
  out_.back().pieces.front().data = &out_.back().header;  // the header's place in the queue
}

void link_connection::queue(frame_kind kind, uint64_t id, const wire_buffer& payload) {
  push_back({make_header(kind, id, 0, 0, payload.size_bytes()), payload, {}, payload.pieces()});
}

void link_connection::queue(const frame_header& h) { push_back({h, {}, {}, {}}); }

void link_connection::queue(const frame_header& h, int fd) { push_back({h, {}, {}, {}, fd}); }

void link_connection::queue_failure(uint64_t id, const caf::error& err) {
  auto [h, text] = failure_frame(id, err);
  push_back({h, {}, std::move(text), {}});
  auto& f = out_.back();
  if (f.text.empty()) return;
  f.pieces.push_back({f.text.data(), f.text.size()});
  unsent_bytes_ += f.text.size();
}

link_connection::write_status link_connection::flush() {
  constexpr std::size_t max_parts = 64;
  while (!out_.empty()) {
    iovec parts[max_parts];
    int count = 0;
    std::size_t skip = sent_;
    // A frame with a descriptor goes alone: the descriptor rides on the write's first byte.
    const int descriptor = out_.front().descriptor;
    for (auto& f : out_) {
      if (count > 0 && (descriptor >= 0 || f.descriptor >= 0)) break;
      if (count + f.pieces.size() > max_parts && count > 0) break;
      for (const auto& p : f.pieces) {
        if (count == static_cast<int>(max_parts)) break;  // a frame of more pieces: the rest next
        if (skip >= p.bytes) {
          skip -= p.bytes;
          continue;
        }
        parts[count++] = {const_cast<char*>(static_cast<const char*>(p.data)) + skip, p.bytes - skip};
        skip = 0;
      }
    }
    auto r = descriptor >= 0 ? stream_->write_with_descriptor(parts, count, descriptor)
                             : stream_->write(parts, count);
    if (r.what == byte_stream::outcome::would_block) return write_status::blocked;
    if (r.what != byte_stream::outcome::progress) return write_status::broken;
    out_.front().descriptor = -1;  // it went with the first byte
    // Drops every frame the kernel took whole; keeps the offset into the first one it did not.
    auto done = r.bytes;
    unsent_bytes_ -= done;
    done += sent_;
    while (!out_.empty()) {
      const auto& front = out_.front().header;
      auto whole = sizeof(frame_header) + (in_region(front) ? 0 : static_cast<std::size_t>(front.size));
      if (done < whole) break;
      done -= whole;
      out_.pop_front();
    }
    sent_ = done;
  }
  return write_status::done;
}

} // namespace actorps
