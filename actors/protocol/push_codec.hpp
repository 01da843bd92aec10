// The worker–shard exchange on the wire: a push (a gradient, with the keys of the next clock's
// pull), a pull, and the shard's parameters that answer both (schema Push, Pull,
// ShardParameters). Implemented in push_codec.cpp.
//
// The layout is a contract with two readers that do not wait for a whole message: the shard
// reads a push's structure while its values still arrive (arriving_push.hpp), and a worker
// receives a reply's values straight into its parameters (link/receive_in_place.hpp). Both
// assume what encode_push_by_reference and encode_shard_parameters_by_reference write: the
// segment table and segment 0 (every struct and list) first, each block's values a segment of
// its own after it, in block order. tests/wire_layout_test.cpp holds every encoder to it.
#pragma once

#include "actors/protocol/model_spec.hpp"
#include "actors/protocol/wire_buffer.hpp"

#include <caf/expected.hpp>

#include <capnp/common.h>
#include <kj/common.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace actorps {

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

// --- decoders: structural checks only (the shard checks them against its spec) ------------

caf::expected<push_view> decode_push(const wire_buffer& buf);
/// decode_push over a message given as its segments, for a push whose values are still
/// arriving (arriving_push.hpp): a bf16 push is refused before its blocks are read (decode_push
/// widens their values, which are not all in).
caf::expected<push_view>
decode_fp32_push(const std::vector<kj::ArrayPtr<const capnp::word>>& segments);
caf::expected<pull_view> decode_pull(const wire_buffer& buf);
caf::expected<shard_parameters_view> decode_shard_parameters(const wire_buffer& buf);

/// Copies the blocks of a ShardParameters message into the flat parameter vector, checking
/// shard, ids and sizes against the layout; returns the decoded header (blocks pointing into buf).
caf::expected<shard_parameters_view> scatter_shard_parameters(const wire_buffer& buf,
                                                              const block_layout& layout,
                                                              float* flat);

} // namespace actorps
