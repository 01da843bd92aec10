// A message's bytes: flat, or gathered from where its blocks lie.
#include "actors/protocol/wire_buffer.hpp"

#include "actors/protocol/wire_message.hpp"

namespace actorps {

using namespace wire_detail;

wire_buffer wire_buffer::from_bytes(const void* data, std::size_t n) {
  auto words = allocate(words_for(n));
  std::memset(words.get(), 0, words_for(n) * word_bytes);
  if (n > 0) std::memcpy(words.get(), data, n);
  return wire_buffer{std::move(words), words_for(n)};
}

wire_buffer::wire_buffer(const shared_bytes& bytes) {
  if (bytes.empty()) return;
  if (bytes.size() % word_bytes != 0
      || reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(capnp::word) != 0) {
    *this = from_bytes(bytes.data(), bytes.size());  // not a message's words as they were
    return;
  }
  auto* words = reinterpret_cast<capnp::word*>(const_cast<uint8_t*>(bytes.data()));
  words_ = std::shared_ptr<capnp::word[]>(std::const_pointer_cast<void>(bytes.owner()), words);
  size_ = bytes.size() / word_bytes;
}

shared_bytes wire_buffer::share() const {
  const auto whole = flat();
  return shared_bytes{whole.words_, whole.bytes(), whole.size_bytes()};
}

wire_buffer::wire_buffer(std::shared_ptr<const gathered> parts) : gathered_(std::move(parts)) {
  size_ = gathered_->head_words;
  for (const auto& segment : gathered_->external) size_ += segment.size();
}

std::vector<wire_buffer::piece> wire_buffer::pieces() const {
  std::vector<piece> out;
  if (!gathered_) {
    if (size_bytes() > 0) out.push_back({bytes(), size_bytes()});
    return out;
  }
  out.reserve(1 + gathered_->external.size());
  out.push_back({gathered_->head.get(), gathered_->head_words * word_bytes});
  for (const auto& segment : gathered_->external)
    out.push_back({segment.begin(), segment.size() * word_bytes});
  return out;
}

wire_buffer wire_buffer::flat() const {
  if (!gathered_) return *this;
  auto words = allocate(size_);
  auto* at = reinterpret_cast<uint8_t*>(words.get());
  for (const auto& p : pieces()) {
    copy_payload(at, p.data, p.bytes);
    at += p.bytes;
  }
  return wire_buffer{std::move(words), size_};
}

} // namespace actorps
