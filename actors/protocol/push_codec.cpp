// The worker–shard exchange: pushes, pulls and the shard's parameters (push_codec.hpp, which
// states the layout its early readers rely on).
#include "actors/protocol/push_codec.hpp"

#include "actors/protocol/wire_message.hpp"

namespace actorps {

using namespace wire_detail;

namespace {


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

} // namespace

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
