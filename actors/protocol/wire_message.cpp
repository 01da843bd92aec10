// The lists every message family carries: dense blocks (copied, referred to, or as bf16) and
// sparse rows, written into and read from Cap'n Proto messages in place.
#include "actors/protocol/wire_message.hpp"

#include <mutex>

namespace actorps::wire_detail {


std::size_t structure_words(const std::vector<uint32_t>& ids) {
  return header_bound + 1 + 2 * ids.size();  // + list tag + a Block struct per block
}

std::size_t blocks_bound(const block_layout& layout, const std::vector<uint32_t>& ids) {
  std::size_t words = 1 + 2 * ids.size();
  for (auto id : ids) words += words_for(layout.blocks()[id].size * sizeof(float));
  return words;
}



void write_blocks(capnp::List<wire::Block>::Builder list, const block_layout& layout,
                  const std::vector<uint32_t>& ids, const float* base, source from,
                  std::size_t per_value) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& b = layout.blocks()[ids[i]];
    auto out = list[static_cast<unsigned>(i)];
    out.setId(b.id);
    auto bytes = per_value * b.size * sizeof(float);
    auto data = out.initValues(bytes);
    auto padded = words_for(bytes) * word_bytes;
    std::memset(data.begin() + bytes, 0, padded - bytes);  // the last word's unused tail
    auto offset = per_value * (from == source::flat ? b.offset : b.shard_offset);
    copy_payload(data.begin(), base + offset, bytes);
  }
}

void write_bf16_blocks(capnp::List<wire::Block>::Builder list, const block_layout& layout,
                       const std::vector<uint32_t>& ids, const float* flat_grad) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& b = layout.blocks()[ids[i]];
    auto out = list[static_cast<unsigned>(i)];
    out.setId(b.id);
    auto bytes = b.size * sizeof(uint16_t);
    auto data = out.initValues(bytes);
    std::memset(data.begin() + bytes, 0, words_for(bytes) * word_bytes - bytes);
    // Cap'n Proto starts every Data on a word: aligned for uint16_t.
    to_bf16(flat_grad + b.offset, b.size, reinterpret_cast<uint16_t*>(data.begin()));
  }
}

bool referable(const void* p, std::size_t bytes) {
  return bytes > 0 && bytes % word_bytes == 0 && reinterpret_cast<uintptr_t>(p) % word_bytes == 0;
}

std::size_t referenced_blocks_bound(const block_layout& layout, const std::vector<uint32_t>& ids,
                                    const float* base, bool flat) {
  std::size_t words = 1 + 4 * ids.size();
  for (auto id : ids) {
    const auto& b = layout.blocks()[id];
    auto bytes = b.size * sizeof(float);
    if (!referable(base + (flat ? b.offset : b.shard_offset), bytes)) words += words_for(bytes);
  }
  return words;
}

void reference_blocks(capnp::Orphanage orphanage, capnp::List<wire::Block>::Builder list,
                      const block_layout& layout, const std::vector<uint32_t>& ids,
                      const float* base, source from) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& b = layout.blocks()[ids[i]];
    auto out = list[static_cast<unsigned>(i)];
    out.setId(b.id);
    const float* values = base + (from == source::flat ? b.offset : b.shard_offset);
    auto bytes = b.size * sizeof(float);
    if (referable(values, bytes)) {
      out.adoptValues(orphanage.referenceExternalData(
        capnp::Data::Reader(reinterpret_cast<const kj::byte*>(values), bytes)));
    } else {
      auto data = out.initValues(bytes);  // in zeroed memory: its padding is zero
      copy_payload(data.begin(), values, bytes);
    }
  }
}

caf::expected<std::vector<block_view>> read_blocks(capnp::List<wire::Block>::Reader list) {
  std::vector<block_view> out;
  out.reserve(list.size());
  for (auto b : list) {
    auto data = b.getValues();  // aligned to a word: Cap'n Proto objects start on words
    if (data.size() % sizeof(float) != 0)
      return make_error(errc::malformed_message, "block " + std::to_string(b.getId()) + " has "
                                                   + std::to_string(data.size())
                                                   + " bytes, not a whole number of floats");
    out.push_back({b.getId(), reinterpret_cast<const float*>(data.begin()),
                   data.size() / sizeof(float)});
  }
  return out;
}

namespace {


/// Float buffers for widened bf16 pushes, reused: a fresh one per push would cost an allocation,
/// its page faults and a pass zeroing it (a quarter of a shard's update for the default model).
/// A buffer comes back when the last view of its push is gone (any thread); a few are kept.
class widened_pool {
public:
  std::shared_ptr<const std::vector<float>> take(std::size_t floats, float*& data) {
    std::unique_ptr<std::vector<float>> buf;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        buf = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!buf) buf = std::make_unique<std::vector<float>>();
    buf->resize(floats);  // zeroes only what it adds: nothing once the buffer has served
    data = buf->data();
    return std::shared_ptr<const std::vector<float>>(buf.release(), [this](const std::vector<float>* b) {
      give_back(std::unique_ptr<std::vector<float>>(const_cast<std::vector<float>*>(b)));
    });
  }

private:
  void give_back(std::unique_ptr<std::vector<float>> buf) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kept) free_.push_back(std::move(buf));
  }

  static constexpr std::size_t kept = 8;  // a shard holds a few pushes at once at most
  std::mutex mutex_;
  std::vector<std::unique_ptr<std::vector<float>>> free_;
};

/// Never destroyed: a view may outlive static destruction order.
widened_pool& widened_buffers() {
  static auto* pool = new widened_pool;
  return *pool;
}

} // namespace


caf::error read_bf16_blocks(capnp::List<wire::Block>::Reader list, push_view& out) {
  std::size_t total = 0;
  for (auto b : list) {
    auto data = b.getValues();
    if (data.size() % sizeof(uint16_t) != 0)
      return make_error(errc::malformed_message, "bf16 block " + std::to_string(b.getId())
                                                   + " has " + std::to_string(data.size())
                                                   + " bytes, not a whole number of values");
    total += data.size() / sizeof(uint16_t);
  }
  float* at = nullptr;
  auto widened = widened_buffers().take(total, at);
  out.blocks.reserve(list.size());
  for (auto b : list) {
    auto data = b.getValues();  // aligned to a word: Cap'n Proto objects start on words
    auto n = data.size() / sizeof(uint16_t);
    from_bf16(reinterpret_cast<const uint16_t*>(data.begin()), n, at);
    out.blocks.push_back({b.getId(), at, n});
    at += n;
  }
  out.widened = std::move(widened);
  return {};
}

// --- sparse rows -----------------------------------------------------------------------------

std::size_t sparse_structure_words(std::size_t parts) { return 1 + 3 * parts; }

std::size_t sparse_bound(const std::vector<sparse_rows_ref>& parts) {
  std::size_t words = sparse_structure_words(parts.size());
  for (const auto& p : parts)
    words += words_for(p.count * sizeof(uint64_t))
             + (p.rows ? words_for(p.count * p.dim * sizeof(float)) : 0);
  return words;
}

uint8_t* padded(capnp::Data::Builder data) {
  auto bytes = data.size();
  std::memset(data.begin() + bytes, 0, words_for(bytes) * word_bytes - bytes);
  return data.begin();
}

void write_sparse(capnp::List<wire::SparseRows>::Builder list,
                  const std::vector<sparse_rows_ref>& parts) {
  for (unsigned i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    auto out = list[i];
    out.setTable(p.table);
    auto* keys = reinterpret_cast<uint64_t*>(padded(out.initKeys(p.count * sizeof(uint64_t))));
    if (p.pos) {
      for (std::size_t j = 0; j < p.count; ++j) keys[j] = p.keys[p.pos[j]];
      count_copied(p.count * sizeof(uint64_t));
    } else {
      copy_payload(keys, p.keys, p.count * sizeof(uint64_t));
    }
    if (!p.rows) continue;
    auto row_bytes = p.dim * sizeof(float);
    auto* values = padded(out.initValues(p.count * row_bytes));
    if (p.pos)
      for (std::size_t j = 0; j < p.count; ++j)
        copy_payload(values + j * row_bytes, p.rows + std::size_t(p.pos[j]) * p.dim, row_bytes);
    else
      copy_payload(values, p.rows, p.count * row_bytes);
  }
}

caf::expected<std::vector<sparse_rows_view>>
read_sparse(capnp::List<wire::SparseRows>::Reader list) {
  std::vector<sparse_rows_view> out;
  out.reserve(list.size());
  for (auto r : list) {
    auto keys = r.getKeys();
    auto values = r.getValues();
    if (keys.size() % sizeof(uint64_t) != 0 || values.size() % sizeof(float) != 0)
      return make_error(errc::malformed_message,
                        "sparse rows of table " + std::to_string(r.getTable()) + ": "
                          + std::to_string(keys.size()) + " key bytes, "
                          + std::to_string(values.size()) + " value bytes");
    out.push_back({r.getTable(), reinterpret_cast<const uint64_t*>(keys.begin()),
                   keys.size() / sizeof(uint64_t), reinterpret_cast<const float*>(values.begin()),
                   values.size() / sizeof(float)});
  }
  return out;
}

} // namespace actorps::wire_detail
