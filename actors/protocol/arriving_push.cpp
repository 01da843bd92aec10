#include "actors/protocol/arriving_push.hpp"

#include "actors/protocol/errors.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace actorps {

namespace {

constexpr std::size_t word = sizeof(capnp::word);
/// As many segments as Cap'n Proto's flat readers accept; a worker's push has one per block.
constexpr std::size_t most_segments = 512;

/// Read-only zeros, as many bytes as asked, for the stand-ins: one region per thread, grown when
/// a larger push comes (virtual memory only: every page is the kernel's zero page). nullptr when
/// none can be mapped, and the push is read whole.
const capnp::word* zeros(std::size_t bytes) {
  struct region {
    void* at = nullptr;
    std::size_t bytes = 0;
    ~region() {
      if (at) ::munmap(at, bytes);
    }
  };
  thread_local region r;
  if (bytes <= r.bytes) return static_cast<const capnp::word*>(r.at);
  auto grown = std::max(bytes, 2 * r.bytes);
  void* at = ::mmap(nullptr, grown, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (at == MAP_FAILED) return nullptr;
  if (r.at) ::munmap(r.at, r.bytes);
  r.at = at;
  r.bytes = grown;
  return static_cast<const capnp::word*>(at);
}

uint32_t table_entry(const wire_buffer& buf, std::size_t i) {
  uint32_t v;
  std::memcpy(&v, buf.bytes() + 4 * i, sizeof v);
  return v;
}

} // namespace

std::size_t arrived_structure(const wire_buffer& buf, std::size_t arrived) {
  if (arrived < word || buf.is_gathered() || buf.size_bytes() < word) return 0;
  const std::size_t segments = std::size_t(table_entry(buf, 0)) + 1;
  if (segments < 2 || segments > most_segments) return 0;
  const std::size_t end = ((segments + 2) / 2 + std::size_t(table_entry(buf, 1))) * word;
  if (end > arrived || end > buf.size_bytes()) return 0;
  return end;
}

std::optional<arriving_push> read_arriving_push(const wire_buffer& buf, std::size_t arrived) {
  const auto head = arrived_structure(buf, arrived);
  if (head == 0) return std::nullopt;
  const std::size_t segments = std::size_t(table_entry(buf, 0)) + 1;
  const std::size_t table_words = (segments + 2) / 2;
  // Segment 0 is the real bytes, in; each later one a stand-in at the same offset past the head.
  const std::size_t rest = buf.size_bytes() - head;
  const capnp::word* stand_in = zeros(rest);
  if (stand_in == nullptr && rest > 0) return std::nullopt;
  std::vector<kj::ArrayPtr<const capnp::word>> parts;
  parts.reserve(segments);
  parts.push_back(kj::arrayPtr(buf.words() + table_words, std::size_t(table_entry(buf, 1))));
  std::size_t offset = 0;  // words past the head
  for (std::size_t i = 1; i < segments; ++i) {
    const std::size_t size = table_entry(buf, i + 1);
    if (size > rest / word - offset) return std::nullopt;  // past the buffer's end
    parts.push_back(kj::arrayPtr(stand_in + offset, size));
    offset += size;
  }
  if (offset != rest / word) return std::nullopt;  // bytes after the message: read whole
  auto push = decode_fp32_push(parts);
  if (!push) return std::nullopt;
  arriving_push out;
  out.push = std::move(*push);
  const auto* real = reinterpret_cast<const uint8_t*>(buf.words() + table_words);
  const auto* shadow = reinterpret_cast<const uint8_t*>(stand_in);
  for (auto& b : out.push.blocks) {
    const auto* at = reinterpret_cast<const uint8_t*>(b.values);
    const std::size_t bytes = b.count * sizeof(float);
    std::size_t from;  // in the buffer's bytes
    if (bytes == 0) {
      from = head;  // nothing to wait for (and no place: an empty Data may point anywhere)
    } else if (at >= real && at < buf.bytes() + head) {
      from = static_cast<std::size_t>(at - buf.bytes());
    } else if (shadow != nullptr && at >= shadow && at < shadow + rest) {
      from = head + static_cast<std::size_t>(at - shadow);
    } else {
      return std::nullopt;  // Cap'n Proto bounds every blob by its segment: cannot happen
    }
    b.values = reinterpret_cast<const float*>(buf.bytes() + from);
    out.ends.push_back(from + bytes);
  }
  return out;
}

caf::error check_read_early(const push_view& early, const wire_buffer& whole) {
  auto differs = [](const std::string& what) {
    return make_error(errc::malformed_message,
                      "push: " + what + " once whole differs from what its first bytes said "
                        "(its structure lies past its first segment)");
  };
  auto push = decode_push(whole);
  if (!push) return std::move(push.error());
  if (push->worker != early.worker || push->clock != early.clock || push->shard != early.shard
      || push->incarnation != early.incarnation || push->precision != early.precision)
    return differs("its header");
  if (!push->sparse.empty() || !push->pull_keys.empty() || !early.sparse.empty()
      || !early.pull_keys.empty())
    return differs("its sparse rows");
  if (push->blocks.size() != early.blocks.size()) return differs("its block count");
  for (std::size_t i = 0; i < early.blocks.size(); ++i) {
    const auto& a = push->blocks[i];
    const auto& b = early.blocks[i];
    if (a.id != b.id || a.count != b.count || (a.count > 0 && a.values != b.values))
      return differs("block " + std::to_string(i));
  }
  return {};
}

} // namespace actorps
