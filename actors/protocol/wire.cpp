#include "actors/protocol/wire.hpp"

#include "kernels/optimizer_table.hpp"
#include "kernels/sparse/row_optimizer_table.hpp"
#include "schema/actorps.capnp.h"

#include <capnp/message.h>
#include <capnp/orphan.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "Data fields carry float32 in host order, which must be little-endian");

namespace actorps {

static_assert(unsigned(wire::DataSource::Kind::CRITEO) == unsigned(data_source::kind::criteo)
              && unsigned(wire::DataSource::Kind::LIBSVM) == unsigned(data_source::kind::libsvm)
              && unsigned(wire::DataSource::Kind::CSV) == unsigned(data_source::kind::csv)
              && unsigned(wire::DataSource::Kind::SYNTHETIC)
                   == unsigned(data_source::kind::synthetic));

namespace {

constexpr std::size_t word_bytes = sizeof(capnp::word);

constexpr std::size_t header_bound = 128;  // root structs, enums
constexpr std::size_t max_tensors = 1u << 16;  // a spec with more is refused

std::size_t words_for(std::size_t bytes);

/// memcpy of payload bytes, counted in copied_payload_bytes. Bytes already where they belong (a
/// reply received in place, receive_in_place.hpp, scattered) are neither copied nor counted.
void copy_payload(void* to, const void* from, std::size_t n) {
  if (n == 0 || to == from) return;
  std::memcpy(to, from, n);
  copied_payload_bytes.fetch_add(n, std::memory_order_relaxed);
}

void count_copied(std::size_t n) { copied_payload_bytes.fetch_add(n, std::memory_order_relaxed); }

/// Segment words a TrainSpec's model needs beyond header_bound: its name, and per tensor a
/// struct, its name and its shape.
std::size_t spec_bound(const train_spec& spec) {
  std::size_t words = words_for(spec.model.name.size() + 1) + 1;
  for (const auto& t : spec.model.tensors)
    words += 4 + words_for(t.name.size() + 1) + words_for(4 * t.shape.size()) + 1;
  for (const auto& t : spec.model.sparse_tables)
    words += wire::SparseTableSpec::_capnpPrivate::dataWordSize
             + wire::SparseTableSpec::_capnpPrivate::pointerCount
             + words_for(t.name.size() + 1) + 1;  // a SparseTableSpec and its name
  return words + 1 + words_for(2 * spec.bucket_shards.size());
}

std::size_t words_for(std::size_t bytes) { return (bytes + word_bytes - 1) / word_bytes; }

/// Builds one single-segment message directly inside the buffer that will travel. `bound` is
/// an upper bound on the segment's words, and the first `zero_words` of them are zeroed:
/// Cap'n Proto needs zeroed memory wherever it does not write every byte itself. Messages
/// carrying blocks zero only their structure (allocated first: root, lists) and each Data's
/// padding (write_blocks), since the floats overwrite the rest. The segment table goes first.
template <class Fill>
wire_buffer build(std::size_t bound, std::size_t zero_words, Fill&& fill) {
  auto words = wire_buffer::allocate(1 + bound);
  std::memset(words.get() + 1, 0, std::min(zero_words, bound) * sizeof(capnp::word));
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

/// The words a message with the blocks `ids` needs zeroed: everything before the first Data.
std::size_t structure_words(const std::vector<uint32_t>& ids) {
  return header_bound + 1 + 2 * ids.size();  // + list tag + a Block struct per block
}

/// Segment words needed for a List(Block) holding `ids`: list tag + 2 words per Block struct +
/// the padded Data of each.
std::size_t blocks_bound(const block_layout& layout, const std::vector<uint32_t>& ids) {
  std::size_t words = 1 + 2 * ids.size();
  for (auto id : ids) words += words_for(layout.blocks()[id].size * sizeof(float));
  return words;
}


enum class source { flat, shard };

/// Writes each block's values; `per_value` floats per parameter (optimizer state: its slots).
void write_blocks(capnp::List<wire::Block>::Builder list, const block_layout& layout,
                  const std::vector<uint32_t>& ids, const float* base, source from,
                  std::size_t per_value = 1) {
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

/// Writes each block's gradient as bf16 (--wire-precision bf16): 2 bytes a value.
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

/// Whether a block at `p` of `bytes` can be a segment of its own: Cap'n Proto needs it to start
/// on a word and would send the rest of its last word, which must then be the block's own.
bool referable(const void* p, std::size_t bytes) {
  return bytes > 0 && bytes % word_bytes == 0 && reinterpret_cast<uintptr_t>(p) % word_bytes == 0;
}

/// Segment 0's words for a message of the blocks `ids` built by reference: the list, a Block
/// struct and a landing pad (2 words: the pointer to another segment) per block, and the
/// values of the blocks that cannot be referred to (copied into segment 0).
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

/// Points each block's values at base (a segment of its own) where it can, else copies them.
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

/// A Push's bf16 blocks, widened (exactly) into out.widened, which the blocks' values point at.
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

/// Segment words of a List(SparseRows)'s structure: the list tag and 3 words per element (a
/// data word for the table, pointers to keys and values). Allocated before any Data, so that
/// it lies in the zeroed prefix of the message (see build).
std::size_t sparse_structure_words(std::size_t parts) { return 1 + 3 * parts; }

std::size_t sparse_bound(const std::vector<sparse_rows_ref>& parts) {
  std::size_t words = sparse_structure_words(parts.size());
  for (const auto& p : parts)
    words += words_for(p.count * sizeof(uint64_t))
             + (p.rows ? words_for(p.count * p.dim * sizeof(float)) : 0);
  return words;
}

/// The bytes of a Data field just allocated, with the unused tail of its last word zeroed (the
/// caller writes the rest).
uint8_t* padded(capnp::Data::Builder data) {
  auto bytes = data.size();
  std::memset(data.begin() + bytes, 0, words_for(bytes) * word_bytes - bytes);
  return data.begin();
}

/// Writes each part's keys (and rows, when it has them), gathered through its positions.
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

/// Segment words of a table's AdmissionState: the struct and its two arrays.
std::size_t admission_state_bound(const sparse_table_rows& t) {
  return wire::AdmissionState::_capnpPrivate::dataWordSize
         + wire::AdmissionState::_capnpPrivate::pointerCount
         + words_for(4 * t.pending_clocks.size()) + words_for(t.sketch.counters.size());
}

/// Segment words of the SparseTableState list for `tables`: its elements (a data word and a
/// pointer per array) and each array padded to words.
std::size_t table_states_bound(const std::vector<sparse_table_rows>& tables) {
  constexpr std::size_t element = wire::SparseTableState::_capnpPrivate::dataWordSize
                                  + wire::SparseTableState::_capnpPrivate::pointerCount;
  std::size_t words = 1 + element * tables.size();
  for (const auto& t : tables)
    words += words_for(8 * t.keys.size()) + words_for(4 * t.values.size())
             + words_for(4 * t.state.size()) + words_for(4 * t.touches.size())
             + words_for(4 * t.steps.size()) + words_for(8 * t.pending_keys.size())
             + words_for(4 * t.pending_counts.size()) + words_for(4 * t.clocks.size())
             + admission_state_bound(t) + words_for(8 * t.removed_keys.size());
  return words;
}

template <class T>
void copy_into(capnp::Data::Builder data, const std::vector<T>& from) {
  copy_payload(data.begin(), from.data(), from.size() * sizeof(T));
}

/// Writes a table's admission state (every checkpoint of it goes through here): the exact
/// pending keys and counts, and the AdmissionState section (their clocks, or the sketch).
void write_admission_state(wire::SparseTableState::Builder out, const sparse_table_rows& t) {
  copy_into(out.initPendingKeys(8 * t.pending_keys.size()), t.pending_keys);
  copy_into(out.initPendingCounts(4 * t.pending_counts.size()), t.pending_counts);
  auto admission = out.initAdmission();
  copy_into(admission.initPendingClocks(4 * t.pending_clocks.size()), t.pending_clocks);
  admission.setSketchDepth(t.sketch.depth);
  admission.setSketchDecayAt(t.sketch.decay_at);
  copy_into(admission.initSketchCounters(t.sketch.counters.size()), t.sketch.counters);
}

/// Writes checkpoint tables into a message zeroed in full (so no padding to clear).
void write_table_states(capnp::List<wire::SparseTableState>::Builder list,
                        const std::vector<sparse_table_rows>& tables) {
  for (unsigned i = 0; i < tables.size(); ++i) {
    const auto& t = tables[i];
    auto out = list[i];
    out.setTable(i);
    copy_into(out.initKeys(8 * t.keys.size()), t.keys);
    copy_into(out.initValues(4 * t.values.size()), t.values);
    copy_into(out.initState(4 * t.state.size()), t.state);
    copy_into(out.initTouches(4 * t.touches.size()), t.touches);
    copy_into(out.initSteps(4 * t.steps.size()), t.steps);
    copy_into(out.initClocks(4 * t.clocks.size()), t.clocks);
    write_admission_state(out, t);
    if (!t.removed_keys.empty())  // a delta's: a whole table's leaves the field unset
      copy_into(out.initRemovedKeys(8 * t.removed_keys.size()), t.removed_keys);
  }
}

/// Copies a Data field into `to`; false when its length is not a whole number of T.
template <class T>
bool copy_out(capnp::Data::Reader data, std::vector<T>& to) {
  if (data.size() % sizeof(T) != 0) return false;
  to.resize(data.size() / sizeof(T));
  copy_payload(to.data(), data.begin(), data.size());
  return true;
}

/// The tables in table order; their contents are checked against the spec by import_rows.
caf::expected<std::vector<sparse_table_rows>>
read_table_states(capnp::List<wire::SparseTableState>::Reader list) {
  std::vector<sparse_table_rows> out(list.size());
  for (unsigned i = 0; i < list.size(); ++i) {
    auto t = list[i];
    auto& o = out[i];
    if (t.getTable() != i)
      return make_error(errc::malformed_message, "sparse table state " + std::to_string(i)
                                                   + " is labelled table "
                                                   + std::to_string(t.getTable()));
    if (!copy_out(t.getKeys(), o.keys) || !copy_out(t.getValues(), o.values)
        || !copy_out(t.getState(), o.state) || !copy_out(t.getTouches(), o.touches)
        || !copy_out(t.getSteps(), o.steps) || !copy_out(t.getPendingKeys(), o.pending_keys)
        || !copy_out(t.getPendingCounts(), o.pending_counts)
        || !copy_out(t.getClocks(), o.clocks) || !copy_out(t.getRemovedKeys(), o.removed_keys)
        || !copy_out(t.getAdmission().getPendingClocks(), o.pending_clocks)
        || !copy_out(t.getAdmission().getSketchCounters(), o.sketch.counters))
      return make_error(errc::malformed_message,
                        "sparse table state " + std::to_string(i) + ": an array of partial items");
    o.sketch.depth = t.getAdmission().getSketchDepth();
    o.sketch.decay_at = t.getAdmission().getSketchDecayAt();
  }
  return out;
}

/// Moves a decoded part into its place in the view; its error, if decoding it failed.
template <class T>
caf::error take(caf::expected<T> got, T& into) {
  if (!got) return std::move(got.error());
  into = std::move(*got);
  return caf::none;
}

void write_spec(wire::TrainSpec::Builder out, const train_spec& spec) {
  auto model = out.initModel();
  model.setName(spec.model.name);
  auto tensors = model.initTensors(static_cast<unsigned>(spec.model.tensors.size()));
  for (unsigned i = 0; i < spec.model.tensors.size(); ++i) {
    const auto& t = spec.model.tensors[i];
    auto w = tensors[i];
    w.setName(t.name);
    auto shape = w.initShape(static_cast<unsigned>(t.shape.size()));
    for (unsigned d = 0; d < t.shape.size(); ++d) shape.set(d, t.shape[d]);
    w.setInit(t.init == tensor_init::uniform ? wire::TensorSpec::Init::UNIFORM
                                             : wire::TensorSpec::Init::ZEROS);
    w.setScale(t.scale);
  }
  auto tables = model.initSparseTables(static_cast<unsigned>(spec.model.sparse_tables.size()));
  for (unsigned i = 0; i < spec.model.sparse_tables.size(); ++i) {
    const auto& t = spec.model.sparse_tables[i];
    const auto& o = t.config.optimizer;
    auto w = tables[i];
    w.setName(t.name);
    w.setDim(t.config.dim);
    w.setInit(static_cast<wire::SparseTableSpec::Init>(t.config.init));
    w.setScale(t.config.scale);
    w.setAdmitAfter(t.config.admit_after);
    w.setOptimizer(static_cast<wire::SparseTableSpec::Optimizer>(o.kind));
    w.setLearningRate(o.learning_rate);
    w.setInitialAccumulator(o.initial_accumulator);
    w.setEpsilon(o.epsilon);
    w.setBeta1(o.beta1);
    w.setBeta2(o.beta2);
    w.setFtrlBeta(o.ftrl_beta);
    w.setL1(o.l1);
    w.setL2(o.l2);
    w.setEvictAfter(t.config.evict_after);
    w.setMaxRows(t.config.max_rows);
    w.setAdmissionMemory(t.config.admission_memory);
  }
  model.setBlockFloats(spec.block_floats);
  model.setNumShards(static_cast<uint32_t>(spec.shards));
  out.setMode(static_cast<wire::Mode>(spec.mode));
  out.setStaleness(spec.staleness);
  out.setWorkers(static_cast<uint32_t>(spec.workers));
  out.setOptimizer(static_cast<wire::Optimizer>(spec.optimizer.kind));
  out.setLearningRate(spec.optimizer.learning_rate);
  out.setMomentum(spec.optimizer.momentum);
  out.setBeta1(spec.optimizer.beta1);
  out.setBeta2(spec.optimizer.beta2);
  out.setEpsilon(spec.optimizer.epsilon);
  out.setSeed(spec.seed);
  out.setLrSchedule(static_cast<wire::LrSchedule>(spec.schedule));
  out.setTotalClocks(spec.total_clocks);
  out.setCheckpointEvery(spec.checkpoint_every);
  auto buckets = out.initBucketShards(static_cast<unsigned>(spec.bucket_shards.size()));
  for (unsigned i = 0; i < spec.bucket_shards.size(); ++i) buckets.set(i, spec.bucket_shards[i]);
  out.setWirePrecision(static_cast<wire::WirePrecision>(spec.wire));
}

caf::expected<train_spec> read_spec(wire::TrainSpec::Reader in) {
  train_spec spec;
  auto model = in.getModel();
  spec.model.name = model.getName().cStr();
  spec.model.tensors.clear();
  if (model.getTensors().size() > max_tensors)
    return make_error(errc::invalid_spec, std::to_string(model.getTensors().size()) + " tensors");
  for (auto t : model.getTensors()) {
    tensor_spec tensor;
    tensor.name = t.getName().cStr();
    for (auto d : t.getShape()) tensor.shape.push_back(d);
    auto init = static_cast<unsigned>(t.getInit());
    if (init > 1) return make_error(errc::invalid_spec, "unknown initializer of " + tensor.name);
    tensor.init = static_cast<tensor_init>(init);
    tensor.scale = t.getScale();
    spec.model.tensors.push_back(std::move(tensor));
  }
  if (model.getSparseTables().size() > max_tensors)
    return make_error(errc::invalid_spec,
                      std::to_string(model.getSparseTables().size()) + " sparse tables");
  for (auto t : model.getSparseTables()) {
    sparse_table_spec table;
    table.name = t.getName().cStr();
    auto init = static_cast<unsigned>(t.getInit());
    auto kind = static_cast<unsigned>(t.getOptimizer());
    if (init > 2 || kind >= row_optimizer_count)
      return make_error(errc::invalid_spec, "unknown initializer or optimizer of " + table.name);
    auto& c = table.config;
    c.dim = t.getDim();
    c.init = static_cast<row_init>(init);
    c.scale = t.getScale();
    c.admit_after = t.getAdmitAfter();
    c.optimizer.kind = static_cast<row_optimizer_kind>(kind);
    c.optimizer.learning_rate = t.getLearningRate();
    c.optimizer.initial_accumulator = t.getInitialAccumulator();
    c.optimizer.epsilon = t.getEpsilon();
    c.optimizer.beta1 = t.getBeta1();
    c.optimizer.beta2 = t.getBeta2();
    c.optimizer.ftrl_beta = t.getFtrlBeta();
    c.optimizer.l1 = t.getL1();
    c.optimizer.l2 = t.getL2();
    c.evict_after = t.getEvictAfter();
    c.max_rows = t.getMaxRows();
    c.admission_memory = t.getAdmissionMemory();
    spec.model.sparse_tables.push_back(std::move(table));
  }
  if (auto why = invalid_model(spec.model); !why.empty())
    return make_error(errc::invalid_spec, why);
  spec.block_floats = model.getBlockFloats();
  spec.shards = static_cast<int>(model.getNumShards());
  spec.workers = static_cast<int>(in.getWorkers());
  auto mode = static_cast<unsigned>(in.getMode());
  auto opt = static_cast<unsigned>(in.getOptimizer());
  auto schedule = static_cast<unsigned>(in.getLrSchedule());
  if (spec.shards > max_shards || spec.workers > max_workers)
    return make_error(errc::invalid_spec, std::to_string(spec.shards) + " shards, "
                                            + std::to_string(spec.workers) + " workers");
  if (auto why = invalid_cut(spec.model, spec.block_floats, spec.shards); !why.empty())
    return make_error(errc::invalid_spec, why);
  if (spec.block_floats == 0 || spec.shards <= 0 || spec.workers <= 0 || mode > 2 || opt >= optimizer_count
      || schedule > 2 || in.getTotalClocks() < 0 || in.getStaleness() < 0 || !(in.getLearningRate() > 0) || !std::isfinite(in.getLearningRate()))
    return make_error(errc::invalid_spec, "out-of-range field in TrainSpec");
  spec.mode = static_cast<consistency>(mode);
  spec.staleness = in.getStaleness();
  spec.optimizer.kind = static_cast<optimizer_kind>(opt);
  spec.optimizer.learning_rate = in.getLearningRate();
  spec.optimizer.momentum = in.getMomentum();
  spec.optimizer.beta1 = in.getBeta1();
  spec.optimizer.beta2 = in.getBeta2();
  spec.optimizer.epsilon = in.getEpsilon();
  spec.seed = in.getSeed();
  spec.schedule = static_cast<lr_schedule>(schedule);
  spec.total_clocks = in.getTotalClocks();
  spec.checkpoint_every = in.getCheckpointEvery();
  if (spec.checkpoint_every < 0) return make_error(errc::invalid_spec, "negative checkpointEvery");
  if (in.getBucketShards().size() > 65536)
    return make_error(errc::invalid_spec, "more than 65536 buckets");
  for (auto b : in.getBucketShards()) spec.bucket_shards.push_back(b);
  if (auto why = invalid_buckets(spec); !why.empty()) return make_error(errc::invalid_spec, why);
  auto precision = static_cast<unsigned>(in.getWirePrecision());
  if (precision > unsigned(wire_precision::bf16))
    return make_error(errc::invalid_spec, "wire precision " + std::to_string(precision));
  spec.wire = static_cast<wire_precision>(precision);
  return spec;
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

} // namespace

wire_buffer wire_buffer::from_bytes(const void* data, std::size_t n) {
  auto words = allocate(words_for(n));
  std::memset(words.get(), 0, words_for(n) * word_bytes);
  if (n > 0) std::memcpy(words.get(), data, n);
  return wire_buffer{std::move(words), words_for(n)};
}

/// Fills a Push: its fields, then every list (their structure first: it must lie in the zeroed
/// prefix of a copied push), then the blocks, which `write` copies or refers to.
template <class WriteBlocks>
void fill_push(capnp::MessageBuilder& mb, int32_t worker, int64_t clock, int32_t shard,
               uint32_t incarnation, std::size_t blocks, const std::vector<sparse_rows_ref>& sparse,
               const std::vector<sparse_rows_ref>& pull_keys, WriteBlocks&& write,
               wire_precision precision = wire_precision::fp32) {
  auto push = mb.initRoot<wire::Push>();
  push.setWorker(worker);
  push.setClock(clock);
  push.setShard(shard);
  push.setIncarnation(incarnation);
  push.setPrecision(static_cast<wire::WirePrecision>(precision));
  auto list = push.initBlocks(static_cast<unsigned>(blocks));
  auto rows = push.initSparse(static_cast<unsigned>(sparse.size()));
  auto keys = push.initPullKeys(static_cast<unsigned>(pull_keys.size()));
  write(list);
  write_sparse(rows, sparse);
  write_sparse(keys, pull_keys);
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

wire_buffer encode_push_by_reference(int32_t worker, int64_t clock, int32_t shard,
                                     const block_layout& layout, const float* flat_grad,
                                     std::shared_ptr<const void> keep, uint32_t incarnation,
                                     const std::vector<sparse_rows_ref>& sparse,
                                     const std::vector<sparse_rows_ref>& pull_keys) {
  const auto& ids = layout.shard_blocks(shard);
  auto bound = header_bound + referenced_blocks_bound(layout, ids, flat_grad, true)
               + sparse_bound(sparse) + sparse_bound(pull_keys);
  return build_gathered(bound, 1 + ids.size(), std::move(keep), [&](capnp::MessageBuilder& mb) {
    fill_push(mb, worker, clock, shard, incarnation, ids.size(), sparse, pull_keys, [&](auto list) {
      reference_blocks(mb.getOrphanage(), list, layout, ids, flat_grad, source::flat);
    });
  });
}

wire_buffer encode_shard_parameters_by_reference(int32_t shard, int64_t min_clock,
                                                 int64_t newest_clock, const block_layout& layout,
                                                 const float* shard_buffer,
                                                 std::shared_ptr<const void> keep) {
  const auto& ids = layout.shard_blocks(shard);
  auto bound = header_bound + referenced_blocks_bound(layout, ids, shard_buffer, false);
  return build_gathered(bound, 1 + ids.size(), std::move(keep), [&](capnp::MessageBuilder& mb) {
    auto msg = mb.initRoot<wire::ShardParameters>();
    msg.setShard(shard);
    msg.setMinClock(min_clock);
    msg.setNewestClock(newest_clock);
    auto blocks = msg.initBlocks(static_cast<unsigned>(ids.size()));
    msg.initSparse(0);
    reference_blocks(mb.getOrphanage(), blocks, layout, ids, shard_buffer, source::shard);
  });
}

wire_buffer encode_push(int32_t worker, int64_t clock, int32_t shard, const block_layout& layout,
                        const float* flat_grad, uint32_t incarnation,
                        const std::vector<sparse_rows_ref>& sparse,
                        const std::vector<sparse_rows_ref>& pull_keys,
                        wire_precision precision) {
  const auto& ids = layout.shard_blocks(shard);
  auto zeroed = structure_words(ids) + sparse_structure_words(sparse.size())
                + sparse_structure_words(pull_keys.size());
  return build(header_bound + blocks_bound(layout, ids) + sparse_bound(sparse)
                 + sparse_bound(pull_keys),  // bf16 blocks need half of blocks_bound's floats
               zeroed, [&](capnp::MessageBuilder& mb) {
    fill_push(mb, worker, clock, shard, incarnation, ids.size(), sparse, pull_keys, [&](auto list) {
      if (precision == wire_precision::bf16)
        write_bf16_blocks(list, layout, ids, flat_grad);
      else
        write_blocks(list, layout, ids, flat_grad, source::flat);
    }, precision);
  });
}

wire_buffer encode_pull(int32_t worker, int64_t clock, int32_t shard,
                        const std::vector<sparse_rows_ref>& keys) {
  return build(header_bound + sparse_bound(keys), header_bound + sparse_structure_words(keys.size()),
               [&](capnp::MessageBuilder& mb) {
    auto msg = mb.initRoot<wire::Pull>();
    msg.setWorker(worker);
    msg.setClock(clock);
    msg.setShard(shard);
    write_sparse(msg.initKeys(static_cast<unsigned>(keys.size())), keys);
  });
}

wire_buffer encode_shard_parameters(int32_t shard, int64_t min_clock, int64_t newest_clock,
                                    const block_layout& layout, const float* shard_buffer,
                                    const std::vector<sparse_rows_view>& asked,
                                    const std::vector<uint32_t>& dims,
                                    const sparse_row_reader& read) {
  const auto& ids = layout.shard_blocks(shard);
  auto rows_words = sparse_structure_words(asked.size());
  for (const auto& a : asked) rows_words += words_for(a.key_count * dims[a.table] * sizeof(float));
  return build(header_bound + blocks_bound(layout, ids) + rows_words,
               structure_words(ids) + sparse_structure_words(asked.size()),
               [&](capnp::MessageBuilder& mb) {
    auto msg = mb.initRoot<wire::ShardParameters>();
    msg.setShard(shard);
    msg.setMinClock(min_clock);
    msg.setNewestClock(newest_clock);
    auto blocks = msg.initBlocks(static_cast<unsigned>(ids.size()));
    auto rows = msg.initSparse(static_cast<unsigned>(asked.size()));
    write_blocks(blocks, layout, ids, shard_buffer, source::shard);
    for (unsigned i = 0; i < asked.size(); ++i) {
      const auto& a = asked[i];
      rows[i].setTable(a.table);
      auto* out = padded(rows[i].initValues(a.key_count * dims[a.table] * sizeof(float)));
      if (a.key_count > 0) read(a.table, a.keys, a.key_count, reinterpret_cast<float*>(out));
      count_copied(a.key_count * dims[a.table] * sizeof(float));
    }
  });
}

wire_buffer encode_all_rows_pull(int32_t shard) {
  return build(header_bound, header_bound, [&](capnp::MessageBuilder& mb) {
    auto msg = mb.initRoot<wire::Pull>();
    msg.setWorker(-1);
    msg.setShard(shard);
    msg.setAllRows(true);
  });
}

wire_buffer encode_shard_parameters(int32_t shard, int64_t min_clock, int64_t newest_clock,
                                    const block_layout& layout, const float* shard_buffer,
                                    const std::vector<sparse_rows_ref>& rows) {
  const auto& ids = layout.shard_blocks(shard);
  return build(header_bound + blocks_bound(layout, ids) + sparse_bound(rows),
               structure_words(ids) + sparse_structure_words(rows.size()),
               [&](capnp::MessageBuilder& mb) {
    auto msg = mb.initRoot<wire::ShardParameters>();
    msg.setShard(shard);
    msg.setMinClock(min_clock);
    msg.setNewestClock(newest_clock);
    auto blocks = msg.initBlocks(static_cast<unsigned>(ids.size()));
    auto parts = msg.initSparse(static_cast<unsigned>(rows.size()));
    write_blocks(blocks, layout, ids, shard_buffer, source::shard);
    write_sparse(parts, rows);
  });
}

wire_buffer encode_shard_init(const train_spec& spec, int32_t shard, const block_layout& layout,
                              const float* shard_buffer) {
  const auto& ids = layout.shard_blocks(shard);
  auto bound = header_bound + spec_bound(spec) + blocks_bound(layout, ids);
  return build(bound, bound, [&](capnp::MessageBuilder& mb) {  // rare: zero it all
    auto msg = mb.initRoot<wire::ShardInit>();
    write_spec(msg.initSpec(), spec);
    msg.setShard(shard);
    write_blocks(msg.initBlocks(static_cast<unsigned>(ids.size())), layout, ids, shard_buffer,
                 source::shard);
  });
}

namespace {

/// A Push's fields and lists; with `fp32_only`, a bf16 push is refused before its blocks are
/// read (widening them reads every value).
caf::expected<push_view> read_push(capnp::MessageReader& reader, bool fp32_only) {
  auto msg = reader.getRoot<wire::Push>();
  push_view out;
  out.worker = msg.getWorker();
  out.clock = msg.getClock();
  out.shard = msg.getShard();
  out.incarnation = msg.getIncarnation();
  out.precision = static_cast<wire_precision>(msg.getPrecision());
  if (out.precision == wire_precision::bf16 && !fp32_only) {
    if (auto err = read_bf16_blocks(msg.getBlocks(), out)) return err;
  } else if (out.precision != wire_precision::fp32) {
    return make_error(errc::malformed_message,
                      "wire precision " + std::to_string(unsigned(msg.getPrecision())));
  } else if (auto err = take(read_blocks(msg.getBlocks()), out.blocks)) {
    return err;
  }
  if (auto err = take(read_sparse(msg.getSparse()), out.sparse)) return err;
  if (auto err = take(read_sparse(msg.getPullKeys()), out.pull_keys)) return err;
  return out;
}

} // namespace

caf::expected<push_view> decode_push(const wire_buffer& buf) {
  return decode<push_view>(buf, "push", [](capnp::MessageReader& reader) {
    return read_push(reader, false);
  });
}

caf::expected<push_view>
decode_fp32_push(const std::vector<kj::ArrayPtr<const capnp::word>>& segments) {
  std::size_t words = 0;
  for (const auto& s : segments) words += s.size();
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = 4 * words + 1024;  // as decode's
    capnp::SegmentArrayMessageReader reader(kj::arrayPtr(segments.data(), segments.size()),
                                            options);
    return read_push(reader, true);
  } catch (const kj::Exception& e) {
    return make_error(errc::malformed_message, std::string("push: ") + e.getDescription().cStr());
  }
}

caf::expected<pull_view> decode_pull(const wire_buffer& buf) {
  return decode<pull_view>(buf, "pull", [](capnp::MessageReader& reader) -> caf::expected<pull_view> {
    auto msg = reader.getRoot<wire::Pull>();
    pull_view out;
    out.worker = msg.getWorker();
    out.clock = msg.getClock();
    out.shard = msg.getShard();
    if (auto err = take(read_sparse(msg.getKeys()), out.keys)) return err;
    out.all_rows = msg.getAllRows();
    return out;
  });
}

caf::expected<shard_parameters_view> decode_shard_parameters(const wire_buffer& buf) {
  using result = caf::expected<shard_parameters_view>;
  return decode<shard_parameters_view>(buf, "shard parameters", [](capnp::MessageReader& reader) -> result {
    auto msg = reader.getRoot<wire::ShardParameters>();
    shard_parameters_view out;
    out.shard = msg.getShard();
    out.min_clock = msg.getMinClock();
    out.newest_clock = msg.getNewestClock();
    if (auto err = take(read_blocks(msg.getBlocks()), out.blocks)) return err;
    if (auto err = take(read_sparse(msg.getSparse()), out.sparse)) return err;
    return out;
  });
}

caf::expected<shard_init_view> decode_shard_init(const wire_buffer& buf) {
  using result = caf::expected<shard_init_view>;
  return decode<shard_init_view>(buf, "shard init", [](capnp::MessageReader& reader) -> result {
    auto msg = reader.getRoot<wire::ShardInit>();
    shard_init_view out;
    if (auto err = take(read_spec(msg.getSpec()), out.spec)) return err;
    out.shard = msg.getShard();
    if (auto err = take(read_blocks(msg.getBlocks()), out.blocks)) return err;
    return out;
  });
}

wire_buffer encode_role_setup(const role_setup& setup) {
  std::size_t text = 0;
  for (const auto& a : setup.shard_addresses) text += words_for(a.size() + 1) + 1;
  auto bound = header_bound + spec_bound(setup.spec) + words_for(setup.data.dir.size() + 1)
               + words_for(setup.data.train_path.size() + 1) + words_for(setup.data.test_path.size() + 1)
               + text;
  return build(bound, bound, [&](capnp::MessageBuilder& mb) {  // rare: zero it all
    auto msg = mb.initRoot<wire::RoleSetup>();
    write_spec(msg.initSpec(), setup.spec);
    msg.setIndex(setup.index);
    msg.setBatch(static_cast<uint32_t>(setup.batch));
    msg.setSteps(setup.steps);
    msg.setSlowMs(static_cast<uint32_t>(setup.slow_ms));
    msg.setRequestTimeoutMs(static_cast<uint32_t>(setup.request_timeout.count()));
    auto data = msg.initData();
    // the schema's kinds are data_source::kind's, in the same order
    data.setKind(static_cast<wire::DataSource::Kind>(setup.data.what));
    data.setTrainPath(setup.data.train_path);
    data.setTestPath(setup.data.test_path);
    data.setDir(setup.data.dir);
    data.setTrainRows(static_cast<uint32_t>(setup.data.train_rows));
    data.setTestRows(static_cast<uint32_t>(setup.data.test_rows));
    data.setSeed(setup.data.seed);
    data.setCols(static_cast<uint32_t>(setup.data.cols));
    data.setGroupField(setup.data.group_field);
    auto addresses = msg.initShardAddresses(static_cast<unsigned>(setup.shard_addresses.size()));
    for (unsigned i = 0; i < setup.shard_addresses.size(); ++i)
      addresses.set(i, setup.shard_addresses[i]);
    msg.setBackend(static_cast<uint8_t>(setup.backend));
    msg.setDevice(setup.device);
    msg.setStartClock(setup.start_clock);
    msg.setIncarnation(setup.incarnation);
    msg.setDataOffset(setup.data_offset);
  });
}

caf::expected<role_setup> decode_role_setup(const wire_buffer& buf) {
  using result = caf::expected<role_setup>;
  return decode<role_setup>(buf, "role setup", [](capnp::MessageReader& reader) -> result {
    auto msg = reader.getRoot<wire::RoleSetup>();
    role_setup out;
    if (auto err = take(read_spec(msg.getSpec()), out.spec)) return err;
    out.index = msg.getIndex();
    out.batch = static_cast<int>(msg.getBatch());
    out.steps = msg.getSteps();
    out.slow_ms = static_cast<int>(msg.getSlowMs());
    out.request_timeout = std::chrono::milliseconds(msg.getRequestTimeoutMs());
    auto data = msg.getData();
    if (data.getKind() > wire::DataSource::Kind::CRITEO)
      return make_error(errc::malformed_message, "unknown data source kind "
                                                   + std::to_string(unsigned(data.getKind())));
    out.data.what = static_cast<data_source::kind>(data.getKind());
    out.data.train_path = data.getTrainPath();
    out.data.test_path = data.getTestPath();
    out.data.dir = data.getDir();
    out.data.train_rows = static_cast<int>(data.getTrainRows());
    out.data.test_rows = static_cast<int>(data.getTestRows());
    out.data.seed = data.getSeed();
    out.data.cols = static_cast<int>(data.getCols());
    out.data.group_field = data.getGroupField();
    if (out.data.group_field < -1 || out.data.group_field >= 26)  // C1..C26
      return make_error(errc::malformed_message, "group field "
                                                   + std::to_string(out.data.group_field)
                                                   + " is not a Criteo field");
    for (auto a : msg.getShardAddresses()) out.shard_addresses.emplace_back(a.cStr());
    if (msg.getBackend() > static_cast<uint8_t>(backend_kind::automatic))
      return make_error(errc::invalid_spec, "unknown backend in RoleSetup");
    out.backend = static_cast<backend_kind>(msg.getBackend());
    out.device = msg.getDevice();
    out.start_clock = msg.getStartClock();
    out.incarnation = msg.getIncarnation();
    out.data_offset = msg.getDataOffset();
    if (out.batch <= 0 || out.steps < 0 || out.start_clock < 0
        || out.start_clock < out.data_offset  // a minibatch before the first
        || out.index < 0 || out.index >= out.spec.workers
        || out.shard_addresses.size() != static_cast<std::size_t>(out.spec.shards)
        || out.data.train_rows <= 0 || out.data.test_rows <= 0)
      return make_error(errc::invalid_spec, "out-of-range field in RoleSetup");
    return out;
  });
}

wire_buffer encode_shard_checkpoint(const train_spec& spec, int32_t shard, int64_t clock,
                                    uint64_t optimizer_step, int64_t newest_clock,
                                    const block_layout& layout, const float* shard_buffer,
                                    const float* state, std::size_t slots,
                                    const std::vector<sparse_table_rows>& sparse,
                                    int64_t delta_since) {
  const auto& ids = layout.shard_blocks(shard);
  auto state_words = 1 + 2 * ids.size();
  for (auto id : ids) state_words += words_for(slots * layout.blocks()[id].size * sizeof(float));
  auto bound = header_bound + spec_bound(spec) + blocks_bound(layout, ids) + state_words
               + table_states_bound(sparse);
  return build(bound, bound, [&](capnp::MessageBuilder& mb) {  // rare: zero it all
    auto msg = mb.initRoot<wire::ShardCheckpoint>();
    write_spec(msg.initSpec(), spec);
    msg.setShard(shard);
    msg.setClock(clock);
    msg.setOptimizerStep(optimizer_step);
    msg.setNewestClock(newest_clock);
    write_blocks(msg.initBlocks(static_cast<unsigned>(ids.size())), layout, ids, shard_buffer,
                 source::shard);
    write_blocks(msg.initState(static_cast<unsigned>(ids.size())), layout, ids, state,
                 source::shard, slots);
    write_table_states(msg.initSparse(static_cast<unsigned>(sparse.size())), sparse);
    msg.setDeltaSince(delta_since);
  });
}

wire_buffer encode_shard_checkpoint(const train_spec& spec, const shard_checkpoint_view& saved) {
  auto views_words = [](const std::vector<block_view>& views) {
    std::size_t words = 1 + 2 * views.size();
    for (const auto& v : views) words += words_for(v.count * sizeof(float));
    return words;
  };
  auto write_views = [](capnp::List<wire::Block>::Builder list, const std::vector<block_view>& views) {
    for (unsigned i = 0; i < views.size(); ++i) {
      list[i].setId(views[i].id);
      auto bytes = views[i].count * sizeof(float);
      auto data = list[i].initValues(bytes);  // zeroed: the whole buffer is
      copy_payload(data.begin(), views[i].values, bytes);
    }
  };
  auto bound = header_bound + spec_bound(spec) + views_words(saved.blocks) + views_words(saved.state)
               + table_states_bound(saved.sparse);
  return build(bound, bound, [&](capnp::MessageBuilder& mb) {  // rare: zero it all
    auto msg = mb.initRoot<wire::ShardCheckpoint>();
    write_spec(msg.initSpec(), spec);
    msg.setShard(saved.shard);
    msg.setClock(saved.clock);
    msg.setOptimizerStep(saved.optimizer_step);
    msg.setNewestClock(saved.newest_clock);
    write_views(msg.initBlocks(static_cast<unsigned>(saved.blocks.size())), saved.blocks);
    write_views(msg.initState(static_cast<unsigned>(saved.state.size())), saved.state);
    write_table_states(msg.initSparse(static_cast<unsigned>(saved.sparse.size())), saved.sparse);
    msg.setDeltaSince(saved.delta_since);
  });
}

int64_t shard_checkpoint_delta_since(const wire_buffer& buf) {
  auto since = decode<int64_t>(buf, "shard checkpoint", [](capnp::MessageReader& reader) {
    return caf::expected<int64_t>(reader.getRoot<wire::ShardCheckpoint>().getDeltaSince());
  });
  return since ? *since : -1;
}

caf::expected<shard_checkpoint_view> decode_shard_checkpoint(const wire_buffer& buf) {
  using result = caf::expected<shard_checkpoint_view>;
  return decode<shard_checkpoint_view>(buf, "shard checkpoint", [](capnp::MessageReader& reader) -> result {
    auto msg = reader.getRoot<wire::ShardCheckpoint>();
    shard_checkpoint_view out;
    if (auto err = take(read_spec(msg.getSpec()), out.spec)) return err;
    out.shard = msg.getShard();
    out.clock = msg.getClock();
    out.optimizer_step = msg.getOptimizerStep();
    out.newest_clock = msg.getNewestClock();
    out.delta_since = msg.getDeltaSince();
    if (auto err = take(read_blocks(msg.getBlocks()), out.blocks)) return err;
    if (auto err = take(read_blocks(msg.getState()), out.state)) return err;
    if (auto err = take(read_table_states(msg.getSparse()), out.sparse)) return err;
    if (out.clock < 0) return make_error(errc::invalid_spec, "negative checkpoint clock");
    if (out.delta_since < -1 || out.delta_since > out.clock)
      return make_error(errc::invalid_spec, "a delta since clock " + std::to_string(out.delta_since)
                                              + " in a checkpoint of clock "
                                              + std::to_string(out.clock));
    for (const auto& t : out.sparse)
      if (out.delta_since < 0 && !t.removed_keys.empty())
        return make_error(errc::invalid_spec, "tombstones in a whole checkpoint");
    if (out.optimizer_step > uint64_t(std::numeric_limits<int64_t>::max()))
      return make_error(errc::invalid_spec, "optimizer step out of range");
    return out;
  });
}

wire_buffer encode_run_checkpoint(const run_checkpoint& run) {
  auto bound = header_bound + spec_bound(run.spec) + 1 + 8 * run.positions.size()
               + words_for(run.run_id.size() + 1) + words_for(run.dataset.size() + 1) + 8;
  for (const auto& f : run.files)
    bound += 6 + words_for(f.name.size() + 1) + 1 + f.rows.size();
  return build(bound, bound, [&](capnp::MessageBuilder& mb) {
    auto msg = mb.initRoot<wire::RunCheckpoint>();
    write_spec(msg.initSpec(), run.spec);
    msg.setClock(run.clock);
    msg.setBatch(static_cast<uint32_t>(run.batch));
    msg.setSteps(run.steps);
    msg.setSamples(run.samples);
    msg.setWallSeconds(run.wall_s);
    auto positions = msg.initPositions(static_cast<unsigned>(run.positions.size()));
    for (unsigned i = 0; i < run.positions.size(); ++i) {
      const auto& p = run.positions[i];
      positions[i].setWorker(p.worker);
      positions[i].setClock(p.clock);
      positions[i].setEpoch(p.epoch);
      positions[i].setBatchInEpoch(p.batch_in_epoch);
      positions[i].setFile(p.file);
      positions[i].setFileRow(p.file_row);
    }
    msg.setRunId(run.run_id);
    msg.setDataset(run.dataset);
    msg.setTrainRows(run.train_rows);
    auto files = msg.initFiles(static_cast<unsigned>(run.files.size()));
    for (unsigned i = 0; i < run.files.size(); ++i) {
      const auto& f = run.files[i];
      files[i].setName(f.name);
      files[i].setBytes(f.bytes);
      auto rows = files[i].initRows(static_cast<unsigned>(f.rows.size()));
      for (unsigned w = 0; w < f.rows.size(); ++w) rows.set(w, f.rows[w]);
    }
  });
}

caf::expected<run_checkpoint> decode_run_checkpoint(const wire_buffer& buf) {
  using result = caf::expected<run_checkpoint>;
  return decode<run_checkpoint>(buf, "run checkpoint", [](capnp::MessageReader& reader) -> result {
    auto msg = reader.getRoot<wire::RunCheckpoint>();
    run_checkpoint out;
    if (auto err = take(read_spec(msg.getSpec()), out.spec)) return err;
    out.clock = msg.getClock();
    out.batch = static_cast<int>(msg.getBatch());
    out.steps = msg.getSteps();
    out.samples = msg.getSamples();
    out.wall_s = msg.getWallSeconds();
    for (auto p : msg.getPositions())
      out.positions.push_back({p.getWorker(), p.getClock(), p.getEpoch(), p.getBatchInEpoch(),
                               p.getFile(), p.getFileRow()});
    out.run_id = msg.getRunId();
    out.dataset = msg.getDataset();
    out.train_rows = msg.getTrainRows();
    for (auto f : msg.getFiles()) {
      stream_file file;
      file.name = f.getName();
      file.bytes = f.getBytes();
      for (auto r : f.getRows()) file.rows.push_back(r);
      if (file.rows.size() != static_cast<std::size_t>(out.spec.workers))
        return make_error(errc::invalid_spec, "StreamFile rows for another number of workers");
      out.files.push_back(std::move(file));
    }
    for (const auto& p : out.positions)
      if (p.file < -1 || p.file >= static_cast<int64_t>(out.files.size()) || p.file_row < 0)
        return make_error(errc::invalid_spec, "DataPosition names no file of RunCheckpoint");
    if (out.clock < 0 || out.batch <= 0 || out.steps < 0
        || out.positions.size() != static_cast<std::size_t>(out.spec.workers))
      return make_error(errc::invalid_spec, "out-of-range field in RunCheckpoint");
    return out;
  });
}

caf::expected<shard_parameters_view> scatter_shard_parameters(const wire_buffer& buf,
                                                              const block_layout& layout,
                                                              float* flat) {
  auto msg = decode_shard_parameters(buf);
  if (!msg) return msg;
  if (msg->shard < 0 || msg->shard >= layout.shards())
    return make_error(errc::wrong_shard, "parameters of shard " + std::to_string(msg->shard));
  const auto& ids = layout.shard_blocks(msg->shard);
  if (msg->blocks.size() != ids.size())
    return make_error(errc::missing_block, "parameters carry " + std::to_string(msg->blocks.size())
                                             + " blocks, expected " + std::to_string(ids.size()));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& b = layout.blocks()[ids[i]];
    const auto& v = msg->blocks[i];
    if (v.id != b.id || v.count != b.size)
      return make_error(errc::wrong_element_count, "block " + std::to_string(v.id));
    copy_payload(flat + b.offset, v.values, b.size * sizeof(float));
  }
  return msg;
}

} // namespace actorps
