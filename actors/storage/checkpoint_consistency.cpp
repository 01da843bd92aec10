#include "actors/storage/checkpoint_consistency.hpp"

#include "actors/ps/data_split.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace actorps {

namespace {

std::string n(int64_t v) { return std::to_string(v); }

/// The furthest clock a run of `run.steps` clocks may reach. A worker that replaced a lost one
/// goes on with its predecessor's data where that stopped, running past the others' last clock
/// by the clocks it entered behind; each worker's end is within `steps` clocks of the furthest
/// other's, so no run goes past steps × workers. A loop of the user's own that gave no length
/// (steps 0: its cluster's total_clocks unset) has no furthest clock.
double furthest_clock(const run_checkpoint& run) {
  if (run.steps == 0) return std::numeric_limits<double>::infinity();
  return double(run.steps) * std::max<int32_t>(1, run.spec.workers);
}

std::string position_inconsistency(const run_checkpoint& run, std::size_t i) {
  const auto& p = run.positions[i];
  const auto at = "data position " + n(int64_t(i)) + " ";
  if (p.worker != int32_t(i)) return at + "is worker " + n(p.worker) + "'s, expected worker " + n(int64_t(i));
  if (p.clock != run.clock)
    return at + "is at clock " + n(p.clock) + ", the checkpoint's is " + n(run.clock);
  if (p.epoch < 0 || p.batch_in_epoch < 0)
    return at + "has a negative epoch or batch (" + n(p.epoch) + ", " + n(p.batch_in_epoch) + ")";
  if (run.train_rows <= 0) return "";
  auto rows = rows_of_worker(run.train_rows, int(p.worker), int(run.spec.workers));
  auto per_epoch = std::max<int64_t>(1, rows / run.batch);
  // where its data is: its clock, or elsewhere when it replaced a lost worker (resuming its
  // data) or went back to a checkpoint; never past the run's end of its data
  if (p.batch_in_epoch >= per_epoch || p.epoch > run.steps / per_epoch
      || p.epoch * per_epoch + p.batch_in_epoch > run.steps)
    return at + "(epoch " + n(p.epoch) + ", batch " + n(p.batch_in_epoch) + ") lies outside worker "
           + n(p.worker) + "'s " + n(rows) + " rows in batches of " + n(run.batch)
           + " at clock " + n(p.clock);
  return "";
}

} // namespace

std::string run_inconsistency(const run_checkpoint& run, int64_t dir_clock) {
  if (run.clock != dir_clock)
    return "is from clock " + n(run.clock) + ", its directory's is " + n(dir_clock);
  if (run.steps != run.spec.total_clocks)
    return "says the run is " + n(run.steps) + " clocks long, its spec " + n(run.spec.total_clocks);
  if (run.clock < 0 || double(run.clock) > furthest_clock(run))
    return "is from clock " + n(run.clock) + ", outside the run's 0.."
           + n(int64_t(furthest_clock(run)));
  if (run.batch <= 0) return "has a batch of " + n(run.batch);
  if (run.train_rows < 0) return "has a training set of " + n(run.train_rows) + " rows";
  // every worker's minibatches so far, at most its data's (a worker that replaced one lost
  // ahead of the others may have trained more minibatches than the clock counts)
  const double most = double(run.steps) * run.batch * run.spec.workers;
  if (run.samples < 0 || double(run.samples) > most)
    return "counts " + n(run.samples) + " samples, outside 0.." + n(int64_t(most)) + " for a run of "
           + n(run.steps) + " clocks";
  if (!std::isfinite(run.wall_s) || run.wall_s < 0)
    return "has a wall time of " + std::to_string(run.wall_s) + " s";
  if (run.positions.size() != std::size_t(run.spec.workers))
    return "has " + n(int64_t(run.positions.size())) + " data positions for " + n(run.spec.workers)
           + " workers";
  for (std::size_t i = 0; i < run.positions.size(); ++i)
    if (auto why = position_inconsistency(run, i); !why.empty()) return why;
  return "";
}

std::string shard_inconsistency(const shard_checkpoint_view& shard, const run_checkpoint& run) {
  if (shard.spec.total_clocks != run.steps || shard.spec.checkpoint_every != run.spec.checkpoint_every)
    return "its spec's length (" + n(shard.spec.total_clocks) + " clocks, every "
           + n(shard.spec.checkpoint_every) + ") differs from run.capnp's (" + n(run.steps)
           + ", every " + n(run.spec.checkpoint_every) + ")";
  if (shard.newest_clock < -1 || double(shard.newest_clock) >= furthest_clock(run))
    return "its newest update is from clock " + n(shard.newest_clock) + ", outside the run's -1.."
           + n(int64_t(furthest_clock(run)) - 1);
  return "";
}

std::string out_of_bounds(const shard_checkpoint_view& shard, const block_layout& layout,
                          float max_parameter) {
  constexpr float any_finite = std::numeric_limits<float>::max();
  auto value = [](float v) { return value_text(v); };
  for (std::size_t i = 0; i < shard.blocks.size(); ++i) {
    if (shard.blocks[i].id >= layout.blocks().size()) return "block " + n(shard.blocks[i].id);
    const auto& b = layout.blocks()[shard.blocks[i].id];
    const auto& tensor = layout.tensors()[b.tensor].name;
    const auto& v = shard.blocks[i];
    if (auto at = first_outside(v.values, v.count, max_parameter))
      return "tensor " + tensor + " (block " + n(b.id) + ") holds " + value(v.values[*at])
             + ", beyond the parameter bound " + value(max_parameter);
    if (i < shard.state.size()) {
      const auto& st = shard.state[i];
      if (auto at = first_outside(st.values, st.count, any_finite))
        return "tensor " + tensor + " (block " + n(b.id) + ") has optimizer state "
               + value(st.values[*at]);
    }
  }
  for (std::size_t t = 0; t < shard.sparse.size(); ++t) {
    const auto& rows = shard.sparse[t];
    auto name = t < shard.spec.model.sparse_tables.size() ? shard.spec.model.sparse_tables[t].name
                                                          : "#" + n(int64_t(t));
    if (auto at = first_outside(rows.values.data(), rows.values.size(), max_parameter))
      return "sparse table " + name + " holds " + value(rows.values[*at])
             + ", beyond the parameter bound " + value(max_parameter);
    if (auto at = first_outside(rows.state.data(), rows.state.size(), any_finite))
      return "sparse table " + name + " has optimizer state " + value(rows.state[*at]);
  }
  return "";
}

} // namespace actorps
