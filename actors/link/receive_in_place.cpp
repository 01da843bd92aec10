#include "actors/link/receive_in_place.hpp"

#include "actors/protocol/errors.hpp"
#include "schema/actorps.capnp.h"

#include <capnp/message.h>
#include <kj/exception.h>

#include <cstring>
#include <vector>

namespace actorps {

namespace {

constexpr std::size_t word = sizeof(capnp::word);

caf::error malformed(const std::string& why) {
  return make_error(errc::malformed_message, "reply received in place: " + why);
}

/// Whether the shard built block `b` as a segment of its own (wire_message.cpp's referable(): a whole
/// number of words, starting on one in the shard's buffer, whose start is word-aligned).
bool shard_referred(const block_info& b) {
  return b.size * sizeof(float) % word == 0 && b.shard_offset * sizeof(float) % word == 0;
}

/// The rest of the payload after the `have` words already in `head`, into one buffer, then
/// decoded and scattered into `flat` (a copy): for replies not laid out as by reference.
caf::expected<shard_parameters_view> receive_and_scatter(const read_parts& read, uint64_t size,
                                                         const std::vector<uint64_t>& head,
                                                         const block_layout& layout, float* flat,
                                                         wire_buffer& structure) {
  auto total = size / word;
  auto storage = wire_buffer::allocate(total);
  std::memcpy(static_cast<void*>(storage.get()), head.data(), head.size() * word);
  iovec rest{storage.get() + head.size(), (total - head.size()) * word};
  if (rest.iov_len > 0)
    if (auto err = read(&rest, 1)) return err;
  structure = wire_buffer{std::move(storage), total};
  return scatter_shard_parameters(structure, layout, flat);
}

} // namespace

caf::expected<shard_parameters_view>
receive_parameters_into(link_socket& link, const frame_header& h, const block_layout& layout,
                        float* flat, wire_buffer& structure) {
  auto read = [&link](iovec* parts, int count) { return link.receive_parts(parts, count); };
  return receive_parameters_into(read, h.size, layout, flat, structure);
}

caf::expected<shard_parameters_view>
receive_parameters_into(const read_parts& read, uint64_t size, const block_layout& layout,
                        float* flat, wire_buffer& structure) {
  const std::size_t total = size / word;
  if (total < 2) return malformed("a payload of " + std::to_string(size) + " bytes");
  // The segment table: its first word says how long it is.
  std::vector<uint64_t> head(1);  // words (capnp::word cannot be moved by a vector)
  iovec first{head.data(), word};
  if (auto err = read(&first, 1)) return err;
  uint32_t count_less_one = 0;
  std::memcpy(&count_less_one, head.data(), 4);
  const std::size_t segments = std::size_t(count_less_one) + 1;
  const std::size_t table_words = (segments + 2) / 2;
  if (segments > layout.blocks().size() + 1 || table_words >= total)
    return malformed(std::to_string(segments) + " segments");
  head.resize(table_words);
  iovec table_rest{head.data() + 1, (table_words - 1) * word};
  if (table_rest.iov_len > 0)
    if (auto err = read(&table_rest, 1)) return err;
  std::vector<uint32_t> sizes(segments);
  std::memcpy(sizes.data(), reinterpret_cast<const uint8_t*>(head.data()) + 4, segments * 4);
  std::size_t sum = table_words;
  for (auto s : sizes) sum += s;
  if (sum != total) return malformed("segments of " + std::to_string(sum) + " words in "
                                     + std::to_string(total));
  if (segments == 1) return receive_and_scatter(read, size, head, layout, flat, structure);

  // Segment 0 (the structure), then which block each further segment is.
  head.resize(table_words + sizes[0]);
  iovec seg0{head.data() + table_words, sizes[0] * word};
  if (auto err = read(&seg0, 1)) return err;
  std::vector<kj::ArrayPtr<const capnp::word>> parts{
    kj::arrayPtr(reinterpret_cast<const capnp::word*>(head.data()) + table_words, sizes[0])};
  std::vector<iovec> places;
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = 4 * total + 1024;
    capnp::SegmentArrayMessageReader structure_only(kj::arrayPtr(parts.data(), 1), options);
    auto msg = structure_only.getRoot<wire::ShardParameters>();
    if (msg.getShard() < 0 || msg.getShard() >= layout.shards()
        || msg.getSparse().size() > 0)
      return receive_and_scatter(read, size, head, layout, flat, structure);
    for (auto b : msg.getBlocks()) {  // ids only: the values may lie in segments not read yet
      if (b.getId() >= layout.blocks().size()) return malformed("block " + std::to_string(b.getId()));
      const auto& info = layout.blocks()[b.getId()];
      if (!shard_referred(info)) continue;
      auto* place = flat + info.offset;
      auto next = parts.size();
      if (next >= segments || sizes[next] * word != info.size * sizeof(float)
          || reinterpret_cast<uintptr_t>(place) % word != 0)
        return receive_and_scatter(read, size, head, layout, flat, structure);
      parts.push_back(kj::arrayPtr(reinterpret_cast<const capnp::word*>(place), sizes[next]));
      places.push_back({place, sizes[next] * word});
    }
  } catch (const kj::Exception& e) {
    return malformed(e.getDescription().cStr());
  }
  if (parts.size() != segments) return receive_and_scatter(read, size, head, layout, flat, structure);
  // Every block's floats straight into its place: one recvmsg (or a few) for all of them.
  if (auto err = read(places.data(), static_cast<int>(places.size()))) return err;

  // Decoded over the places themselves: each referred block must point where it was put.
  auto storage = wire_buffer::allocate(head.size());
  std::memcpy(static_cast<void*>(storage.get()), head.data(), head.size() * word);
  parts[0] = kj::arrayPtr(storage.get() + table_words, sizes[0]);
  auto kept = std::make_shared<wire_buffer::gathered>();
  kept->head = storage;
  kept->head_words = head.size();
  kept->table_words = table_words;
  kept->external.assign(parts.begin() + 1, parts.end());
  structure = wire_buffer{std::shared_ptr<const wire_buffer::gathered>(kept)};
  // The checks of any reply; the blocks already in place are neither copied nor counted, a
  // block the shard copied into segment 0 is copied out.
  return scatter_shard_parameters(structure, layout, flat);
}

} // namespace actorps
