// The one payload type that crosses actor boundaries, and the Cap'n Proto messages it carries.
//
// A wire_buffer is one Cap'n Proto message in flat-array form (segment table + one segment),
// immutable and shared: copying it shares the bytes. Inside a process CAF passes it by
// reference; across processes the middleman ships its bytes in one bulk copy (inspect below
// never serialises element by element). Encoders build the message directly inside the buffer
// that travels, so the float data is copied exactly once; decoders return views whose float
// pointers point into the buffer (no copy) and stay valid while the buffer lives.
#pragma once

#include "actors/protocol/data_source.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/model_spec.hpp"
#include "kernels/backend_factory.hpp"
#include "kernels/sparse/sparse_table.hpp"

#include <caf/deserializer.hpp>
#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/serializer.hpp>

#include <capnp/common.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
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
/// scattering replies: every memcpy of payload in wire.cpp adds to it. The transport benchmark
/// reads it around its round trips ("bytes copied per round trip", counted, not estimated); the
/// kernel's copies (send, receive) and TLS's encryption are not ours and not counted.
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

// --- decoded views ------------------------------------------------------------------------

struct block_view {
  uint32_t id = 0;
  const float* values = nullptr;  ///< points into the wire_buffer
  std::size_t count = 0;
};

/// One sparse table's part of a message (schema SparseRows), decoded: pointers into the buffer
/// (Cap'n Proto starts every Data on a word, so the keys are aligned uint64).
struct sparse_rows_view {
  uint32_t table = 0;
  const uint64_t* keys = nullptr;
  std::size_t key_count = 0;
  const float* values = nullptr;
  std::size_t value_count = 0;     ///< floats
};

/// One sparse table's part of a message to encode, read where it lies: the keys keys[pos[i]]
/// for i < count (keys[i] when pos is null) and, unless rows is null, the row of dim floats at
/// rows + pos[i]·dim of each.
struct sparse_rows_ref {
  uint32_t table = 0;
  uint32_t dim = 0;
  const uint64_t* keys = nullptr;
  const uint32_t* pos = nullptr;
  std::size_t count = 0;
  const float* rows = nullptr;
};

struct push_view {
  int32_t worker = 0;
  int64_t clock = 0;
  int32_t shard = 0;
  uint32_t incarnation = 0;
  wire_precision precision = wire_precision::fp32;  ///< of the blocks as they travelled
  /// bf16 blocks: point into `widened`, their float32 values (widening is exact), shared by
  /// every copy of the view; fp32 blocks point into the wire_buffer.
  std::vector<block_view> blocks;
  std::shared_ptr<const std::vector<float>> widened;
  std::vector<sparse_rows_view> sparse;     ///< gradient rows
  std::vector<sparse_rows_view> pull_keys;  ///< the keys of the pull for clock + 1
};

/// A pull naming sparse keys (schema Pull); worker -1: a snapshot of those rows.
struct pull_view {
  int32_t worker = 0;
  int64_t clock = 0;
  int32_t shard = 0;
  std::vector<sparse_rows_view> keys;
  bool all_rows = false;  ///< a snapshot of every row of every table (keys empty)
};

struct shard_parameters_view {
  int32_t shard = 0;
  int64_t min_clock = 0;
  int64_t newest_clock = -1;       ///< clock of the newest gradient the values include; -1: none
  std::vector<block_view> blocks;
  std::vector<sparse_rows_view> sparse;  ///< the rows of the keys asked, values only
};

struct shard_init_view {
  train_spec spec;
  int32_t shard = 0;
  std::vector<block_view> blocks;
};

/// What the chief tells a worker or evaluator process (distributed runs; schema RoleSetup).
struct role_setup {
  train_spec spec;
  int32_t index = 0;
  int batch = 64;
  int64_t steps = 0;
  int slow_ms = 0;
  std::chrono::milliseconds request_timeout{std::chrono::minutes(2)};
  data_source data;
  std::vector<std::string> shard_addresses;  ///< host:port per shard
  backend_kind backend = backend_kind::cpu;
  int device = 0;
  int64_t start_clock = 0;
  uint32_t incarnation = 0;
  int64_t data_offset = 0;  ///< worker_config::data_offset
};

/// A shard's state at a checkpoint (schema ShardCheckpoint).
struct shard_checkpoint_view {
  train_spec spec;
  int32_t shard = 0;
  int64_t clock = 0;
  uint64_t optimizer_step = 0;     ///< updates applied to the optimizer state (Adam's step)
  int64_t newest_clock = -1;
  std::vector<block_view> blocks;  ///< parameters
  std::vector<block_view> state;   ///< optimizer state: slots × block size floats per block
  std::vector<sparse_table_rows> sparse;  ///< every sparse table's rows, in spec order (copied)
  /// -1: the whole state; C: a delta checkpoint's, its tables holding only the rows pushed at
  /// clock C or later, with tombstones (sparse_table::delta_of)
  int64_t delta_since = -1;
};

/// Where a worker is in its data (schema DataPosition).
struct data_position {
  int32_t worker = 0;
  int64_t clock = 0;          ///< next clock to compute
  int64_t epoch = 0;
  int64_t batch_in_epoch = 0;
  int32_t file = -1;          ///< a training directory's file its next batch starts in (-1: none)
  int64_t file_row = 0;       ///< the worker's rows of that file read before that batch
};

/// One file of a training directory read as a stream (schema StreamFile).
struct stream_file {
  std::string name;           ///< in the directory
  uint64_t bytes = 0;
  std::vector<int64_t> rows;  ///< the rows each worker reads of it
};

/// The run's part of a checkpoint (schema RunCheckpoint).
struct run_checkpoint {
  train_spec spec;
  int64_t clock = 0;
  int batch = 0;
  int64_t steps = 0;
  int64_t samples = 0;
  double wall_s = 0;
  std::vector<data_position> positions;
  std::string run_id;       ///< the lineage: made by a fresh start, kept by every resume
  std::string dataset;      ///< what the run trains on ("" in checkpoints of older versions)
  int64_t train_rows = 0;   ///< rows of that training set
  std::vector<stream_file> files;  ///< a training directory's files in name order (else empty)
};

// --- encoders -----------------------------------------------------------------------------

/// The gradient for shard `shard`'s blocks, taken from the flat gradient vector, with the
/// gradient rows of its sparse keys and the keys of the next clock's pull (both optional).
/// With `precision` bf16 the blocks travel as bf16 (rounded to nearest even; 2 bytes a value);
/// the sparse rows stay float32.
wire_buffer encode_push(int32_t worker, int64_t clock, int32_t shard, const block_layout& layout,
                        const float* flat_grad, uint32_t incarnation = 0,
                        const std::vector<sparse_rows_ref>& sparse = {},
                        const std::vector<sparse_rows_ref>& pull_keys = {},
                        wire_precision precision = wire_precision::fp32);

/// The same push built by reference: each block of the gradient whose bytes are whole words
/// (and start on one) becomes a segment pointing at flat_grad, not a copy. flat_grad must stay
/// unchanged and alive while the buffer lives: `keep`, when given, is kept by the buffer; else
/// the caller guarantees it (a worker computes its next gradient only once every shard has
/// answered this push, which it cannot before the push was sent). Sparse parts are copied.
wire_buffer encode_push_by_reference(int32_t worker, int64_t clock, int32_t shard,
                                     const block_layout& layout, const float* flat_grad,
                                     std::shared_ptr<const void> keep = {},
                                     uint32_t incarnation = 0,
                                     const std::vector<sparse_rows_ref>& sparse = {},
                                     const std::vector<sparse_rows_ref>& pull_keys = {});

/// A pull of shard `shard`'s blocks and of the sparse rows of `keys` (their rows unread).
wire_buffer encode_pull(int32_t worker, int64_t clock, int32_t shard,
                        const std::vector<sparse_rows_ref>& keys);

/// A snapshot request (worker -1) for every row of every sparse table shard `shard` holds: the
/// reply is encode_shard_parameters' with `rows` (keys and values of each table).
wire_buffer encode_all_rows_pull(int32_t shard);

/// Writes the rows of keys[0, n) of sparse table `table` to out (n × its dim floats).
using sparse_row_reader =
  std::function<void(uint32_t table, const uint64_t* keys, std::size_t n, float* out)>;

/// Shard `shard`'s values, taken from its contiguous buffer: a pull reply or a snapshot; with
/// the rows of the keys `asked` (dims: each table's row width), which `read` writes straight
/// into the message.
wire_buffer encode_shard_parameters(int32_t shard, int64_t min_clock, int64_t newest_clock,
                                    const block_layout& layout, const float* shard_buffer,
                                    const std::vector<sparse_rows_view>& asked = {},
                                    const std::vector<uint32_t>& dims = {},
                                    const sparse_row_reader& read = {});

/// A dense reply (no sparse rows) built by reference: its blocks point at shard_buffer, which
/// `keep` keeps alive and which must not change while any holder of the buffer lives (the
/// shard writes updates elsewhere while a reply holds its parameters: dense_update.cpp).
wire_buffer encode_shard_parameters_by_reference(int32_t shard, int64_t min_clock,
                                                 int64_t newest_clock, const block_layout& layout,
                                                 const float* shard_buffer,
                                                 std::shared_ptr<const void> keep);

/// As above with whole rows instead of asked ones: each part's keys and rows (sparse_rows_ref,
/// keys and rows set), the reply to encode_all_rows_pull.
wire_buffer encode_shard_parameters(int32_t shard, int64_t min_clock, int64_t newest_clock,
                                    const block_layout& layout, const float* shard_buffer,
                                    const std::vector<sparse_rows_ref>& rows);

wire_buffer encode_shard_init(const train_spec& spec, int32_t shard, const block_layout& layout,
                              const float* shard_buffer);

wire_buffer encode_role_setup(const role_setup& setup);

/// Shard `shard`'s parameters and optimizer state (`slots` floats per parameter, laid out per
/// block as the shard keeps them: slots × size floats at slots × shard_offset, and the
/// optimizer's step count).
wire_buffer encode_shard_checkpoint(const train_spec& spec, int32_t shard, int64_t clock,
                                    uint64_t optimizer_step, int64_t newest_clock,
                                    const block_layout& layout, const float* shard_buffer,
                                    const float* state, std::size_t slots,
                                    const std::vector<sparse_table_rows>& sparse = {},
                                    int64_t delta_since = -1);

/// The same checkpoint under another spec (a resumed run's: its rate, mode or length may differ
/// from the saved run's; its model and layout may not — the caller checks compatibility).
wire_buffer encode_shard_checkpoint(const train_spec& spec, const shard_checkpoint_view& saved);

wire_buffer encode_run_checkpoint(const run_checkpoint& run);

/// A ShardCheckpoint's deltaSince (-1: whole, or not a ShardCheckpoint), read without decoding
/// the rest.
int64_t shard_checkpoint_delta_since(const wire_buffer& buf);

// --- decoders: structural checks only (the shard checks them against its spec) ------------

caf::expected<push_view> decode_push(const wire_buffer& buf);
/// decode_push over a message given as its segments, for a push whose values are still
/// arriving (arriving_push.hpp): a bf16 push is refused before its blocks are read (decode_push
/// widens their values, which are not all in).
caf::expected<push_view>
decode_fp32_push(const std::vector<kj::ArrayPtr<const capnp::word>>& segments);
caf::expected<pull_view> decode_pull(const wire_buffer& buf);
caf::expected<shard_parameters_view> decode_shard_parameters(const wire_buffer& buf);
caf::expected<shard_init_view> decode_shard_init(const wire_buffer& buf);
caf::expected<role_setup> decode_role_setup(const wire_buffer& buf);
caf::expected<shard_checkpoint_view> decode_shard_checkpoint(const wire_buffer& buf);
caf::expected<run_checkpoint> decode_run_checkpoint(const wire_buffer& buf);

/// Copies the blocks of a ShardParameters message into the flat parameter vector, checking
/// shard, ids and sizes against the layout; returns the decoded header (blocks pointing into buf).
caf::expected<shard_parameters_view> scatter_shard_parameters(const wire_buffer& buf,
                                                              const block_layout& layout,
                                                              float* flat);

} // namespace actorps
