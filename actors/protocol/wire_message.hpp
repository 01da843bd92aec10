// What every codec of the wire shares (internal to actors/protocol/*_codec.cpp): building a
// message inside the buffer that travels, reading one with no exception escaping, the lists
// every family carries (dense blocks, sparse rows; wire_message.cpp), and the TrainSpec that
// setups and checkpoints carry (spec_codec.cpp).
#pragma once

#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/push_codec.hpp"
#include "actors/protocol/wire_buffer.hpp"
#include "schema/actorps.capnp.h"

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include <capnp/message.h>
#include <capnp/orphan.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <memory>
#include <string>
#include <vector>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "Data fields carry float32 in host order, which must be little-endian");

namespace actorps::wire_detail {

constexpr std::size_t word_bytes = sizeof(capnp::word);

constexpr std::size_t header_bound = 128;  // root structs, enums

inline std::size_t words_for(std::size_t bytes) { return (bytes + word_bytes - 1) / word_bytes; }

/// memcpy of payload bytes, counted in copied_payload_bytes. Bytes already where they belong (a
/// reply received in place, receive_in_place.hpp, scattered) are neither copied nor counted.
inline void copy_payload(void* to, const void* from, std::size_t n) {
  if (n == 0 || to == from) return;
  std::memcpy(to, from, n);
  copied_payload_bytes.fetch_add(n, std::memory_order_relaxed);
}

inline void count_copied(std::size_t n) { copied_payload_bytes.fetch_add(n, std::memory_order_relaxed); }

/// `n` zeroed words from calloc: a large buffer is then fresh pages the kernel zeroes as they
/// are first touched, with no memset over them (encoding a 250 MB checkpoint spent as long in
/// memset as in the kernel's zeroing of the same pages).
inline std::shared_ptr<capnp::word[]> zeroed_words(std::size_t n) {
  auto* words = static_cast<capnp::word*>(std::calloc(n, sizeof(capnp::word)));
  if (words == nullptr && n > 0) throw std::bad_alloc();
  return std::shared_ptr<capnp::word[]>(words, [](capnp::word* w) { std::free(w); });
}

/// Builds one single-segment message directly inside the buffer that will travel. `bound` is
/// an upper bound on the segment's words, and the first `zero_words` of them are zeroed:
/// Cap'n Proto needs zeroed memory wherever it does not write every byte itself. Messages
/// carrying blocks zero only their structure (allocated first: root, lists) and each Data's
/// padding (write_blocks), since the floats overwrite the rest. The segment table goes first.
template <class Fill>
wire_buffer build(std::size_t bound, std::size_t zero_words, Fill&& fill) {
  const bool all = zero_words >= bound;
  auto words = all ? zeroed_words(1 + bound) : wire_buffer::allocate(1 + bound);
  if (!all) std::memset(words.get() + 1, 0, zero_words * sizeof(capnp::word));
  std::size_t used = 0;
  {
    capnp::FlatMessageBuilder mb(kj::arrayPtr(words.get() + 1, bound));
    fill(mb);
    used = mb.getSegmentsForOutput()[0].size();
  }
  const uint32_t table[2] = {0, static_cast<uint32_t>(used)};  // one segment of `used` words
  std::memcpy(words.get(), table, sizeof table);
  return wire_buffer{std::move(words), 1 + used};
}

/// Builds a message whose blocks may be segments of their own pointing at the caller's memory
/// (referenceExternalData): segment 0, the structure, lies in a buffer of its own after the
/// segment table, and the other segments stay where they are. `bound` bounds segment 0's words,
/// which are all zeroed (no payload lies in them unless a block had to be copied);
/// `max_segments` bounds the number of segments. `keep` goes with the buffer.
template <class Fill>
wire_buffer build_gathered(std::size_t bound, std::size_t max_segments,
                           std::shared_ptr<const void> keep, Fill&& fill) {
  const std::size_t max_table = max_segments / 2 + 1;  // a table of n segments: (n + 2) / 2 words
  auto storage = wire_buffer::allocate(max_table + bound);
  std::memset(storage.get() + max_table, 0, bound * word_bytes);
  auto parts = std::make_shared<wire_buffer::gathered>();
  std::size_t total = 0;
  {
    capnp::FlatMessageBuilder mb(kj::arrayPtr(storage.get() + max_table, bound));
    fill(mb);
    auto segments = mb.getSegmentsForOutput();
    const std::size_t n = segments.size();
    parts->table_words = (n + 2) / 2;
    auto* table = reinterpret_cast<uint32_t*>(storage.get() + max_table - parts->table_words);
    std::memset(table, 0, parts->table_words * word_bytes);
    table[0] = static_cast<uint32_t>(n - 1);
    for (std::size_t i = 0; i < n; ++i) table[1 + i] = static_cast<uint32_t>(segments[i].size());
    parts->head_words = parts->table_words + segments[0].size();
    total = parts->head_words;
    for (std::size_t i = 1; i < n; ++i) {
      parts->external.push_back(segments[i]);
      total += segments[i].size();
    }
  }
  // The head starts at the table, which lies just before segment 0 (aliasing: same owner).
  parts->head = std::shared_ptr<capnp::word[]>(storage, storage.get() + max_table - parts->table_words);
  parts->keep = std::move(keep);
  return wire_buffer{std::shared_ptr<const wire_buffer::gathered>(std::move(parts))};
}

// --- dense blocks ---------------------------------------------------------------------------

/// The words a message with the blocks `ids` needs zeroed: everything before the first Data.
std::size_t structure_words(const std::vector<uint32_t>& ids);

/// Segment words needed for a List(Block) holding `ids`: list tag + 2 words per Block struct +
/// the padded Data of each.
std::size_t blocks_bound(const block_layout& layout, const std::vector<uint32_t>& ids);

/// The values of a block are read from a flat gradient (a push) or from a shard's buffer.
enum class source { flat, shard };

/// Writes each block's values; `per_value` floats per parameter (optimizer state: its slots).
void write_blocks(capnp::List<wire::Block>::Builder list, const block_layout& layout,
                  const std::vector<uint32_t>& ids, const float* base, source from,
                  std::size_t per_value = 1);

/// Writes each block's gradient as bf16 (--wire-precision bf16): 2 bytes a value.
void write_bf16_blocks(capnp::List<wire::Block>::Builder list, const block_layout& layout,
                       const std::vector<uint32_t>& ids, const float* flat_grad);

/// Whether a block at `p` of `bytes` can be a segment of its own: Cap'n Proto needs it to start
/// on a word and would send the rest of its last word, which must then be the block's own.
bool referable(const void* p, std::size_t bytes);

/// Segment 0's words for a message of the blocks `ids` built by reference: the list, a Block
/// struct and a landing pad (2 words: the pointer to another segment) per block, and the
/// values of the blocks that cannot be referred to (copied into segment 0).
std::size_t referenced_blocks_bound(const block_layout& layout, const std::vector<uint32_t>& ids,
                                    const float* base, bool flat);

/// Points each block's values at base (a segment of its own) where it can, else copies them.
void reference_blocks(capnp::Orphanage orphanage, capnp::List<wire::Block>::Builder list,
                      const block_layout& layout, const std::vector<uint32_t>& ids,
                      const float* base, source from);

caf::expected<std::vector<block_view>> read_blocks(capnp::List<wire::Block>::Reader list);

/// A Push's bf16 blocks, widened (exactly) into out.widened, which the blocks' values point at.
caf::error read_bf16_blocks(capnp::List<wire::Block>::Reader list, push_view& out);

// --- sparse rows ----------------------------------------------------------------------------

/// Segment words of a List(SparseRows)'s structure: the list tag and 3 words per element (a
/// data word for the table, pointers to keys and values). Allocated before any Data, so that
/// it lies in the zeroed prefix of the message (see build).
std::size_t sparse_structure_words(std::size_t parts);

std::size_t sparse_bound(const std::vector<sparse_rows_ref>& parts);

/// The bytes of a Data field just allocated, with the unused tail of its last word zeroed (the
/// caller writes the rest).
uint8_t* padded(capnp::Data::Builder data);

/// Writes each part's keys (and rows, when it has them), gathered through its positions.
void write_sparse(capnp::List<wire::SparseRows>::Builder list,
                  const std::vector<sparse_rows_ref>& parts);

caf::expected<std::vector<sparse_rows_view>>
read_sparse(capnp::List<wire::SparseRows>::Reader list);

// --- reading --------------------------------------------------------------------------------

/// Moves a decoded part into its place in the view; its error, if decoding it failed.
template <class T>
caf::error take(caf::expected<T> got, T& into) {
  if (!got) return std::move(got.error());
  into = std::move(*got);
  return caf::none;
}

/// Runs `read` on the message in `buf`; any Cap'n Proto failure (truncation, bad pointers,
/// traversal limit) becomes a malformed_message error instead of an exception.
template <class T, class Read>
caf::expected<T> decode(const wire_buffer& buf, const char* what, Read&& read) {
  if (buf.size_words() < 2)
    return make_error(errc::malformed_message, std::string(what) + ": empty payload");
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = 4 * buf.size_words() + 1024;  // a full read touches each once
    if (const auto* parts = buf.parts()) {  // built by reference, in this process
      std::vector<kj::ArrayPtr<const capnp::word>> segments;
      segments.push_back(kj::arrayPtr(parts->head.get() + parts->table_words,
                                      parts->head_words - parts->table_words));
      segments.insert(segments.end(), parts->external.begin(), parts->external.end());
      capnp::SegmentArrayMessageReader reader(kj::arrayPtr(segments.data(), segments.size()),
                                              options);
      return read(reader);
    }
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(buf.words(), buf.size_words()), options);
    if (reader.getEnd() != buf.words() + buf.size_words())
      return make_error(errc::malformed_message, std::string(what) + ": trailing bytes");
    return read(reader);
  } catch (const kj::Exception& e) {
    return make_error(errc::malformed_message,
                      std::string(what) + ": " + e.getDescription().cStr());
  }
}

// --- the TrainSpec that setups and checkpoints carry (spec_codec.cpp) -----------------------

/// Segment words a TrainSpec's model needs beyond header_bound: its name, and per tensor a
/// struct, its name and its shape.
std::size_t spec_bound(const train_spec& spec);

void write_spec(wire::TrainSpec::Builder out, const train_spec& spec);

caf::expected<train_spec> read_spec(wire::TrainSpec::Reader in);

} // namespace actorps::wire_detail
