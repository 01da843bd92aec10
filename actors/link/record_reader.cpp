#include "actors/link/record_reader.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace actorps {

record_reader::record_reader(wire_buffer record)
  : record_(std::move(record)), pieces_(record_.pieces()), held_(true) {}

bool record_reader::read(const iovec* parts, int count) {
  for (int i = 0; i < count; ++i) {
    auto* to = static_cast<uint8_t*>(parts[i].iov_base);
    auto want = parts[i].iov_len;
    while (want > 0) {
      if (piece_ == pieces_.size()) return false;
      const auto& p = pieces_[piece_];
      const auto n = std::min(want, p.bytes - at_);
      std::memcpy(to, static_cast<const uint8_t*>(p.data) + at_, n);
      to += n;
      want -= n;
      at_ += n;
      if (at_ == p.bytes) ++piece_, at_ = 0;
    }
  }
  return true;
}

void record_reader::release() {
  record_ = wire_buffer{};
  pieces_.clear();
  piece_ = at_ = 0;
  held_ = false;
}

} // namespace actorps
