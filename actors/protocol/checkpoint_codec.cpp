// Checkpoints on the wire's terms (checkpoint_codec.hpp): a shard's state, whole or a delta,
// with its sparse tables and their admission state, and the run's part.
#include "actors/protocol/checkpoint_codec.hpp"

#include "actors/protocol/wire_message.hpp"
#include "kernels/sparse/row_optimizer.hpp"

#include <cstring>

namespace actorps {

using namespace wire_detail;

namespace {


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
             + admission_state_bound(t) + words_for(8 * t.removed_keys.size())
             + words_for(8 * t.removed_pending.size());
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
    if (!t.removed_pending.empty())
      copy_into(out.initRemovedPending(8 * t.removed_pending.size()), t.removed_pending);
    out.setPendingChangesOnly(t.pending_changes_only);
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
        || !copy_out(t.getRemovedPending(), o.removed_pending)
        || !copy_out(t.getAdmission().getPendingClocks(), o.pending_clocks)
        || !copy_out(t.getAdmission().getSketchCounters(), o.sketch.counters))
      return make_error(errc::malformed_message,
                        "sparse table state " + std::to_string(i) + ": an array of partial items");
    o.sketch.depth = t.getAdmission().getSketchDepth();
    o.sketch.decay_at = t.getAdmission().getSketchDecayAt();
    o.pending_changes_only = t.getPendingChangesOnly();
  }
  return out;
}

} // namespace

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

wire_buffer encode_shard_rows(const train_spec& spec, int32_t shard, int64_t clock,
                              const std::vector<const sparse_table*>& tables,
                              const std::vector<sparse_table::picked_rows>& picked,
                              int64_t delta_since) {
  constexpr std::size_t element = wire::SparseTableState::_capnpPrivate::dataWordSize
                                  + wire::SparseTableState::_capnpPrivate::pointerCount;
  std::size_t bound = header_bound + spec_bound(spec) + 1 + element * tables.size();
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const auto n = picked[t].rows.size();
    const auto dim = tables[t]->config().dim;
    const auto slots = row_state_slots(tables[t]->config().optimizer.kind);
    const auto& p = picked[t].pending;
    bound += words_for(8 * n) + words_for(4 * n * dim) + words_for(4 * n * slots * dim)
             + 3 * words_for(4 * n) + words_for(8 * p.pending_keys.size())
             + words_for(4 * p.pending_counts.size()) + admission_state_bound(p)
             + words_for(8 * picked[t].gone.size());
  }
  return build(bound, bound, [&](capnp::MessageBuilder& mb) {
    auto msg = mb.initRoot<wire::ShardCheckpoint>();
    write_spec(msg.initSpec(), spec);
    msg.setShard(shard);
    msg.setClock(clock);
    msg.setNewestClock(-1);
    auto list = msg.initSparse(static_cast<unsigned>(tables.size()));
    for (unsigned t = 0; t < tables.size(); ++t) {
      const auto& table = *tables[t];
      const auto n = picked[t].rows.size();
      const auto dim = table.config().dim;
      const auto slots = row_state_slots(table.config().optimizer.kind);
      auto out = list[t];
      out.setTable(t);
      // Data fields start on a word: the rows are written straight into them.
      auto words = [](capnp::Data::Builder data) { return data.begin(); };
      auto keys = words(out.initKeys(8 * n));
      auto values = words(out.initValues(4 * n * dim));
      auto state = words(out.initState(4 * n * slots * dim));
      auto touches = words(out.initTouches(4 * n));
      auto steps = table.counts_steps() ? words(out.initSteps(4 * n)) : nullptr;
      auto clocks = words(out.initClocks(4 * n));
      table.copy_rows(picked[t].rows,
                      {reinterpret_cast<uint64_t*>(keys), reinterpret_cast<float*>(values),
                       reinterpret_cast<float*>(state), reinterpret_cast<uint32_t*>(touches),
                       reinterpret_cast<uint32_t*>(steps), reinterpret_cast<uint32_t*>(clocks)});
      write_admission_state(out, picked[t].pending);
      if (!picked[t].gone.empty()) {
        auto gone = out.initRemovedKeys(8 * picked[t].gone.size());
        std::memcpy(gone.begin(), picked[t].gone.data(), 8 * picked[t].gone.size());
      }
    }
    msg.setDeltaSince(delta_since);
  });
}

namespace {

/// A Data field as an array of T where it lies; false when its length is not a whole number
/// of T or it is not aligned for T.
template <class T>
bool in_place(capnp::Data::Reader data, array_in<T>& to) {
  if (data.size() % sizeof(T) != 0 || reinterpret_cast<uintptr_t>(data.begin()) % alignof(T) != 0)
    return false;
  to = {reinterpret_cast<const T*>(data.begin()), data.size() / sizeof(T)};
  return true;
}

} // namespace

caf::expected<shard_rows_view> read_shard_rows(const wire_buffer& buf) {
  using result = caf::expected<shard_rows_view>;
  return decode<shard_rows_view>(buf, "rows of a resize", [](capnp::MessageReader& reader) -> result {
    auto msg = reader.getRoot<wire::ShardCheckpoint>();
    shard_rows_view out;
    if (auto err = take(read_spec(msg.getSpec()), out.spec)) return err;
    out.shard = msg.getShard();
    out.clock = msg.getClock();
    out.delta_since = msg.getDeltaSince();
    if (out.delta_since < -1 || msg.getBlocks().size() > 0 || msg.getState().size() > 0)
      return make_error(errc::malformed_message, "rows of a resize: dense blocks, or a delta "
                                                 "since clock " + std::to_string(out.delta_since));
    const auto tables = msg.getSparse();
    out.tables.resize(tables.size());
    out.gone.resize(tables.size());
    for (unsigned i = 0; i < tables.size(); ++i) {
      auto t = tables[i];
      auto& o = out.tables[i];
      const auto admission = t.getAdmission();
      if (t.getTable() != i || (out.delta_since < 0 && t.getRemovedKeys().size() > 0)
          || t.getRemovedPending().size() > 0 || t.getPendingChangesOnly()
          || admission.getSketchDepth() != 0 || admission.getSketchCounters().size() > 0)
        return make_error(errc::malformed_message,
                          "rows of a resize: table " + std::to_string(i)
                            + " is out of order, or holds tombstones (without a copy ahead) or "
                              "a sketch");
      if (!in_place(t.getKeys(), o.keys) || !in_place(t.getValues(), o.values)
          || !in_place(t.getState(), o.state) || !in_place(t.getTouches(), o.touches)
          || !in_place(t.getSteps(), o.steps) || !in_place(t.getClocks(), o.clocks)
          || !in_place(t.getPendingKeys(), o.pending_keys)
          || !in_place(t.getPendingCounts(), o.pending_counts)
          || !in_place(admission.getPendingClocks(), o.pending_clocks)
          || !in_place(t.getRemovedKeys(), out.gone[i]))
        return make_error(errc::malformed_message,
                          "rows of a resize: table " + std::to_string(i)
                            + ": an array of partial or misaligned items");
    }
    return out;
  });
}

uint64_t shard_checkpoint_row_bytes(const wire_buffer& buf) {
  auto bytes = decode<uint64_t>(buf, "shard checkpoint", [](capnp::MessageReader& reader) {
    uint64_t n = 0;
    for (auto t : reader.getRoot<wire::ShardCheckpoint>().getSparse())
      for (auto data : {t.getKeys(), t.getValues(), t.getState(), t.getTouches(), t.getSteps(),
                        t.getClocks(), t.getPendingKeys(), t.getPendingCounts()})
        n += data.size();
    return caf::expected<uint64_t>(n);
  });
  return bytes ? *bytes : 0;
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
      if (out.delta_since < 0
          && (!t.removed_keys.empty() || !t.removed_pending.empty() || t.pending_changes_only))
        return make_error(errc::invalid_spec,
                          "tombstones or a partial admission state in a whole checkpoint");
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
  bound += 1;
  for (const auto& plan : run.plans) bound += 2 + 3 * plan.size();
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
    auto plans = msg.initPlans(static_cast<unsigned>(run.plans.size()));
    for (unsigned w = 0; w < run.plans.size(); ++w) {
      auto segments = plans[w].initSegments(static_cast<unsigned>(run.plans[w].size()));
      for (unsigned i = 0; i < run.plans[w].size(); ++i) {
        const auto& seg = run.plans[w][i];
        segments[i].setParts(seg.parts);
        segments[i].setPart(seg.part);
        segments[i].setFirst(seg.first);
        segments[i].setCount(seg.count);
      }
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
    for (auto plan : msg.getPlans()) {
      data_plan segments;
      for (auto seg : plan.getSegments()) {
        data_segment d{seg.getParts(), seg.getPart(), seg.getFirst(), seg.getCount()};
        if (d.parts < 1 || d.part < 0 || d.part >= d.parts || d.first < 0 || d.count < 0)
          return make_error(errc::invalid_spec, "out-of-range DataSegment in RunCheckpoint");
        segments.push_back(d);
      }
      out.plans.push_back(std::move(segments));
    }
    if (!out.plans.empty() && out.plans.size() != static_cast<std::size_t>(out.spec.workers))
      return make_error(errc::invalid_spec, "RunCheckpoint plans for another number of workers");
    for (const auto& p : out.positions)
      if (p.file < -1 || p.file >= static_cast<int64_t>(out.files.size()) || p.file_row < 0)
        return make_error(errc::invalid_spec, "DataPosition names no file of RunCheckpoint");
    if (out.clock < 0 || out.batch <= 0 || out.steps < 0
        || out.positions.size() != static_cast<std::size_t>(out.spec.workers))
      return make_error(errc::invalid_spec, "out-of-range field in RunCheckpoint");
    return out;
  });
}

} // namespace actorps
