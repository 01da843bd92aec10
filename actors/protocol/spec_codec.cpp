// The TrainSpec every setup and checkpoint carries, and a shard's start (shard_init_codec.hpp).
#include "actors/protocol/shard_init_codec.hpp"

#include "actors/protocol/wire_message.hpp"
#include "kernels/optimizer_table.hpp"
#include "kernels/sparse/row_optimizer_table.hpp"

#include <cmath>
#include <limits>

namespace actorps {

namespace wire_detail {

namespace {
constexpr std::size_t max_tensors = 1u << 16;  // a spec with more is refused
} // namespace


std::size_t spec_bound(const train_spec& spec) {
  std::size_t words = words_for(spec.model.name.size() + 1) + 1;
  for (const auto& t : spec.model.tensors)
    words += 4 + words_for(t.name.size() + 1) + words_for(4 * t.shape.size()) + 1;
  for (const auto& t : spec.model.sparse_tables)
    words += wire::SparseTableSpec::_capnpPrivate::dataWordSize
             + wire::SparseTableSpec::_capnpPrivate::pointerCount
             + words_for(t.name.size() + 1) + 1;  // a SparseTableSpec and its name
  return words + 2 + words_for(2 * spec.bucket_shards.size())
         + words_for(2 * spec.block_shards.size());
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
  auto blocks = out.initBlockShards(static_cast<unsigned>(spec.block_shards.size()));
  for (unsigned i = 0; i < spec.block_shards.size(); ++i) blocks.set(i, spec.block_shards[i]);
  out.setLrWorkers(static_cast<uint32_t>(spec.lr_workers));
  out.setScheduleFrom(spec.schedule_from);
  out.setScheduleBatches(spec.schedule_batches);
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
  if (in.getBlockShards().size() > max_blocks)
    return make_error(errc::invalid_spec, "a dense placement of more than 2^20 blocks");
  for (auto s : in.getBlockShards()) spec.block_shards.push_back(s);
  if (in.getLrWorkers() > max_workers || in.getScheduleFrom() < 0 || in.getScheduleBatches() < 0)
    return make_error(errc::invalid_spec, "a learning-rate origin out of range");
  spec.lr_workers = static_cast<int>(in.getLrWorkers());
  spec.schedule_from = in.getScheduleFrom();
  spec.schedule_batches = in.getScheduleBatches();
  if (auto why = invalid_block_placement(spec); !why.empty())
    return make_error(errc::invalid_spec, why);
  return spec;
}

} // namespace wire_detail

using namespace wire_detail;

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

} // namespace actorps
