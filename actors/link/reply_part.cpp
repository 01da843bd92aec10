#include "actors/link/reply_part.hpp"

#include "actors/protocol/errors.hpp"

#include <algorithm>
#include <cstring>

namespace actorps {

namespace {

constexpr std::size_t word = sizeof(capnp::word);
constexpr std::size_t head_words = sizeof(reply_part_head) / word;

caf::error malformed(const std::string& why) {
  return make_error(errc::malformed_message, "a reply in parts: " + why);
}

/// What read() returns once a reply or failure has ended the parts (ended_by says which).
caf::error ended_early() {
  return make_error(errc::malformed_message, "a reply in parts ended by its answer");
}

} // namespace

wire_buffer make_reply_part(const wire_buffer& reply, std::size_t from, std::size_t to) {
  auto parts = std::make_shared<wire_buffer::gathered>();
  std::size_t at = 0;
  for (const auto& p : reply.pieces()) {
    const auto lo = std::max(from, at);
    const auto hi = std::min(to, at + p.bytes);
    if (lo < hi)
      parts->external.push_back(kj::arrayPtr(
        reinterpret_cast<const capnp::word*>(static_cast<const uint8_t*>(p.data) + (lo - at)),
        (hi - lo) / word));
    at += p.bytes;
  }
  const std::size_t segments = 1 + parts->external.size();
  parts->table_words = (segments + 2) / 2;
  parts->head_words = parts->table_words + head_words;
  parts->head = wire_buffer::allocate(parts->head_words);
  std::vector<uint32_t> table(parts->table_words * 2, 0);
  table[0] = static_cast<uint32_t>(segments - 1);
  table[1] = static_cast<uint32_t>(head_words);
  for (std::size_t i = 0; i < parts->external.size(); ++i)
    table[2 + i] = static_cast<uint32_t>(parts->external[i].size());
  auto* out = reinterpret_cast<uint8_t*>(parts->head.get());
  std::memcpy(out, table.data(), table.size() * sizeof(uint32_t));
  const reply_part_head head{from, reply.size_bytes()};
  std::memcpy(out + parts->table_words * word, &head, sizeof head);
  parts->keep = std::make_shared<wire_buffer>(reply);
  return wire_buffer{std::shared_ptr<const wire_buffer::gathered>(std::move(parts))};
}

reply_part_reader::reply_part_reader(link_socket& link, const shm_inbox* inbox, other_frame other,
                                     uint64_t max_total)
  : link_(link), inbox_(inbox), other_(std::move(other)), max_total_(max_total) {}

caf::error reply_part_reader::begin(const frame_header& h) {
  id_ = h.id;
  return open(h, true);
}

/// Reads bytes of the current part's payload (its table and head first, then its bytes).
caf::error reply_part_reader::read_source(iovec* parts, int count) {
  if (!record_.holds()) return link_.receive_parts(parts, count);
  if (!record_.read(parts, count)) return malformed("a part shorter than its frame says");
  return {};
}

caf::error reply_part_reader::open(const frame_header& h, bool first) {
  record_.release();
  if (in_region(h)) {
    if (!inbox_) return malformed("a part in shared memory on a link without it");
    auto record = inbox_->take(h.a, h.size, h.b);
    if (!record) return record.error();
    record_ = record_reader{std::move(*record)};
  }
  // The table: its first word says how many segments; segment 0 must be the head, and the
  // segments must fill the frame.
  // (A record of pieces is shorter in the ring than the bytes it names: its size is theirs.)
  const uint64_t size = in_region(h) ? record_.size_bytes() : h.size;
  uint32_t first_word[2] = {0, 0};
  iovec v{first_word, word};
  if (size < 2 * word) return malformed("a part of " + std::to_string(size) + " bytes");
  if (auto err = read_source(&v, 1)) return err;
  const uint64_t segments = uint64_t(first_word[0]) + 1;
  const uint64_t table_words = (segments + 2) / 2;
  if (segments < 2 || segments > max_blocks + 1 || (table_words + head_words) * word >= size)
    return malformed(std::to_string(segments) + " segments in a part of " + std::to_string(size)
                     + " bytes");
  std::vector<uint32_t> table(table_words * 2);
  std::memcpy(table.data(), first_word, word);
  v = {table.data() + 2, (table_words - 1) * word};
  if (v.iov_len > 0)
    if (auto err = read_source(&v, 1)) return err;
  uint64_t sum = table_words;
  for (uint64_t i = 0; i < segments; ++i) sum += table[1 + i];
  if (table[1] != head_words || sum * word != size)
    return malformed("segments that do not fill the part");
  reply_part_head head;
  v = {&head, sizeof head};
  if (auto err = read_source(&v, 1)) return err;
  left_ = size - (table_words + head_words) * word;
  if (first) {
    if (head.total % word != 0 || head.total > max_total_ || head.total < 2 * word)
      return malformed("a reply of " + std::to_string(head.total) + " bytes");
    total_ = head.total;
  }
  if (head.total != total_ || head.from != consumed_ || left_ > total_ - consumed_)
    return malformed("a part of bytes " + std::to_string(head.from) + " to "
                     + std::to_string(head.from + left_) + " of " + std::to_string(head.total)
                     + " where byte " + std::to_string(consumed_) + " of "
                     + std::to_string(total_) + " was due");
  return {};
}

caf::error reply_part_reader::next_part() {
  record_.release();  // read: the record goes back to the shard now
  for (;;) {
    frame_header h;
    if (auto err = link_.receive_header(h)) return err;
    if (auto why = check_header(h); !why.empty()) return make_error(errc::malformed_message, why);
    const auto kind = kind_of(h.kind);
    if (h.id != id_) {
      if (kind == frame_kind::reply_part) return malformed("parts of two replies interleaved");
      if (auto err = other_(h)) return err;
      continue;
    }
    if (kind == frame_kind::reply_part) return open(h, false);
    if (kind == frame_kind::reply || kind == frame_kind::failure) {
      ended_by_ = h;
      return ended_early();
    }
    return malformed("a frame of kind " + std::to_string(h.kind) + " between parts");
  }
}

caf::error reply_part_reader::read(iovec* parts, int count) {
  auto& batch = batch_;
  batch.clear();
  for (int i = 0; i < count; ++i) {
    auto* to = static_cast<uint8_t*>(parts[i].iov_base);
    auto want = parts[i].iov_len;
    while (want > 0) {
      if (left_ == 0) {
        if (!batch.empty()) {  // what this part holds first, in one scatter read
          if (auto err = read_source(batch.data(), static_cast<int>(batch.size()))) return err;
          batch.clear();
        }
        if (consumed_ == total_) return malformed("a reply longer than its parts");
        if (auto err = next_part()) return err;
      }
      auto n = std::min<uint64_t>(want, left_);
      batch.push_back({to, n});
      if (record_.holds()) copied_payload_bytes += n;
      to += n;
      want -= n;
      left_ -= n;
      consumed_ += n;
    }
  }
  if (!batch.empty()) return read_source(batch.data(), static_cast<int>(batch.size()));
  return {};
}

caf::expected<shard_parameters_view> receive_reply_into(link_socket& link, const frame_header& h,
                                                        const block_layout& layout, float* flat,
                                                        wire_buffer& structure) {
  if (kind_of(h.kind) == frame_kind::reply && !in_region(h))
    return receive_parameters_into(link, h, layout, flat, structure);
  if (kind_of(h.kind) != frame_kind::reply_part || in_region(h))
    return make_error(errc::malformed_message, "a frame of kind " + std::to_string(h.kind)
                                                 + " where a reply was due");
  reply_part_reader parts{link, nullptr, [](const frame_header& other) {
                            return make_error(errc::malformed_message,
                                              "an answer to request " + std::to_string(other.id)
                                                + " between parts");
                          }};
  if (auto err = parts.begin(h)) return err;
  auto read = [&](iovec* p, int count) { return parts.read(p, count); };
  auto view = receive_parameters_into(read, parts.total(), layout, flat, structure);
  if (auto end = parts.ended_by()) {  // the shard answered otherwise after all
    if (kind_of(end->kind) == frame_kind::failure) {
      caf::error carried;
      if (auto err = link.receive_failure(*end, carried)) return err;
      return carried;
    }
    return receive_reply_into(link, *end, layout, flat, structure);
  }
  return view;
}

} // namespace actorps
