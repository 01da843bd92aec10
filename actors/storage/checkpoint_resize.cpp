#include "actors/storage/checkpoint_resize.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/placement_change.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/sparse/row_optimizer.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace actorps {

namespace {

[[noreturn]] void refuse(const std::string& why) {
  throw std::invalid_argument("cannot cut the checkpoint for another shard count: " + why);
}

/// `per` values of each source appended to `out` from the old shards' `field` arrays.
template <class T>
void gather(std::vector<T>& out, const std::vector<shard_cut::row_source>& from,
            const std::vector<shard_checkpoint_view>& old, std::size_t table, std::size_t per,
            std::vector<T> sparse_table_rows::*field) {
  out.reserve(from.size() * per);
  for (const auto& r : from) {
    const auto& in = old[r.shard].sparse[table].*field;
    out.insert(out.end(), in.begin() + std::ptrdiff_t(r.index * per),
               in.begin() + std::ptrdiff_t((r.index + 1) * per));
  }
}

/// Whether an optional per-row array is there in every old shard holding rows (else: in none).
template <class Field>
bool present_in_all(const std::vector<shard_checkpoint_view>& old, std::size_t table,
                    Field count_of, const std::string& what) {
  int with = 0, without = 0;
  for (const auto& v : old) {
    auto [have, rows] = count_of(v.sparse[table]);
    if (rows == 0) continue;
    (have ? with : without)++;
  }
  if (with > 0 && without > 0) refuse("some shards record " + what + ", others do not");
  return with > 0;
}

/// `from` (runs of rows, one per old shard, each in its file's order) in key order: the runs
/// merged when each is sorted already (as every shard writes its rows), else sorted.
void in_key_order(std::vector<shard_cut::row_source>& from, const std::vector<std::size_t>& runs) {
  auto by_key = [](const shard_cut::row_source& a, const shard_cut::row_source& b) {
    return a.key < b.key;
  };
  for (std::size_t r = 0; r + 1 < runs.size(); ++r)
    if (!std::is_sorted(from.begin() + std::ptrdiff_t(runs[r]),
                        from.begin() + std::ptrdiff_t(runs[r + 1]), by_key)) {
      std::sort(from.begin(), from.end(), by_key);
      return;
    }
  for (std::size_t r = 1; r + 1 < runs.size(); ++r)
    std::inplace_merge(from.begin(), from.begin() + std::ptrdiff_t(runs[r]),
                       from.begin() + std::ptrdiff_t(runs[r + 1]), by_key);
}

} // namespace

std::vector<uint16_t> resumed_placement(const train_spec& saved, int shards) {
  if (saved.bucket_shards.empty() || saved.shards == shards) return saved.bucket_shards;
  return buckets_after_resize(saved.bucket_shards, shards);
}

bool needs_resize(const train_spec& saved, const train_spec& spec) {
  if (saved.shards != spec.shards || saved.bucket_shards != spec.bucket_shards) return true;
  if (saved.block_shards == spec.block_shards) return false;
  return block_layout(saved).owners() != block_layout(spec).owners();  // one placement empty
}

shard_cut::shard_cut(std::vector<wire_buffer> saved, const train_spec& spec)
    : saved_(std::move(saved)), spec_(spec) {
  std::vector<shard_checkpoint_view> decoded;
  for (std::size_t o = 0; o < saved_.size(); ++o) {
    auto view = decode_shard_checkpoint(saved_[o]);
    if (!view) refuse("shard " + std::to_string(o) + ": " + describe(view.error()));
    decoded.push_back(std::move(*view));
  }
  take(std::move(decoded), dense_files::whole);
}

shard_cut::shard_cut(std::vector<wire_buffer> saved, std::vector<shard_checkpoint_view> decoded,
                     const train_spec& spec, dense_files dense)
    : saved_(std::move(saved)), spec_(spec) {
  if (decoded.size() != saved_.size())
    refuse(std::to_string(decoded.size()) + " decoded files for " + std::to_string(saved_.size())
           + " shard files");
  take(std::move(decoded), dense);
}

void shard_cut::take(std::vector<shard_checkpoint_view> decoded, dense_files dense) {
  const auto& spec = spec_;
  if (saved_.empty()) refuse("no shard files");
  for (std::size_t o = 0; o < saved_.size(); ++o) {
    auto view = &decoded[o];
    if (view->shard != static_cast<int32_t>(o))
      refuse("file " + std::to_string(o) + " holds shard " + std::to_string(view->shard));
    if (view->delta_since >= 0) refuse("shard " + std::to_string(o) + " holds a delta");
    if (view->spec.shards != static_cast<int>(saved_.size()))
      refuse(std::to_string(saved_.size()) + " shard files written by a run of "
             + std::to_string(view->spec.shards) + " shards");
    if (!old_.empty() && (view->clock != old_.front().clock
                          || view->spec.bucket_shards != old_.front().spec.bucket_shards
                          || view->spec.block_shards != old_.front().spec.block_shards))
      refuse("shard " + std::to_string(o) + " is of another clock or placement than shard 0");
    if (view->sparse.size() != spec.model.sparse_tables.size())
      refuse("shard " + std::to_string(o) + " holds " + std::to_string(view->sparse.size())
             + " sparse tables, the model " + std::to_string(spec.model.sparse_tables.size()));
    old_.push_back(std::move(*view));
  }
  decoded.clear();
  const auto buckets = old_.front().spec.bucket_shards.size();
  if (buckets != spec.bucket_shards.size())
    refuse("the checkpoint hashes keys into " + std::to_string(buckets)
           + " buckets, this run into " + std::to_string(spec.bucket_shards.size()));
  const block_layout before(old_.front().spec);
  after_ = std::make_unique<block_layout>(spec);
  if (before.blocks().size() != after_->blocks().size())
    refuse("the checkpoint's model is cut into " + std::to_string(before.blocks().size())
           + " blocks, this run's into " + std::to_string(after_->blocks().size()));
  const auto slots = optimizer_state_slots(spec.optimizer.kind);
  // every block's values and optimizer slots, wherever they were
  values_.resize(after_->blocks().size());
  state_.resize(after_->blocks().size());
  held_by_.assign(after_->blocks().size(), -1);
  for (std::size_t o = 0; o < old_.size(); ++o) {
    const auto& v = old_[o];
    if (v.blocks.size() != v.state.size()) refuse("a shard's blocks and state differ in number");
    for (std::size_t i = 0; i < v.blocks.size(); ++i) {
      auto id = v.blocks[i].id;
      if (id >= values_.size() || v.state[i].id != id || values_[id].values)
        refuse("block " + std::to_string(id) + " is unknown or held twice");
      const auto& b = after_->blocks()[id];
      if (v.blocks[i].count != b.size || v.state[i].count != slots * b.size)
        refuse("block " + std::to_string(id) + " holds another number of values");
      values_[id] = v.blocks[i];
      state_[id] = v.state[i];
      held_by_[id] = static_cast<int32_t>(o);
      if (b.shard != static_cast<int>(o))
        moving_ += sizeof(float) * (v.blocks[i].count + v.state[i].count);
    }
    step_ = std::max(step_, v.optimizer_step);
    newest_ = std::max(newest_, v.newest_clock);
  }
  in_place_.assign(values_.size(), false);
  for (std::size_t id = 0; id < values_.size(); ++id) {
    if (values_[id].values) continue;
    const auto from = before.blocks()[id].shard, to = after_->blocks()[id].shard;
    if (dense == dense_files::whole) refuse("no shard holds block " + std::to_string(id));
    if (from != to)
      refuse("block " + std::to_string(id) + " moves from shard " + std::to_string(from)
             + " to shard " + std::to_string(to) + ", but shard " + std::to_string(from)
             + " did not hand it over");
    held_by_[id] = from;  // it stays there
    in_place_[id] = true;
  }
  sort_rows();
}

void shard_cut::sort_rows() {
  const auto tables = spec_.model.sparse_tables.size();
  const auto shards = static_cast<std::size_t>(spec_.shards);
  rows_.assign(tables, std::vector<std::vector<row_source>>(shards));
  pending_.assign(tables, std::vector<std::vector<row_source>>(shards));
  row_runs_.assign(tables, std::vector<std::vector<std::size_t>>(shards, {0}));
  pending_runs_ = row_runs_;
  for (std::size_t t = 0; t < tables; ++t) {
    const auto& cfg = spec_.model.sparse_tables[t].config;
    const std::size_t dim = cfg.dim, slots = row_state_slots(cfg.optimizer.kind);
    const auto& name = spec_.model.sparse_tables[t].name;
    for (uint32_t o = 0; o < old_.size(); ++o) {
      const auto& in = old_[o].sparse[t];
      const auto n = in.keys.size();
      if (in.values.size() != n * dim || in.state.size() != n * slots * dim
          || in.touches.size() != n || (!in.steps.empty() && in.steps.size() != n)
          || (!in.clocks.empty() && in.clocks.size() != n)
          || in.pending_counts.size() != in.pending_keys.size()
          || (!in.pending_clocks.empty() && in.pending_clocks.size() != in.pending_keys.size()))
        refuse("shard " + std::to_string(o) + "'s table " + name + " has arrays of mismatched "
               "lengths");
      // Cut whole states only: a chain is folded first (its tombstones, rows and pending changes)
      if (!in.removed_keys.empty() || in.pending_changes_only || !in.removed_pending.empty())
        refuse("shard " + std::to_string(o) + " holds a delta");
      // one pass over the old shard's keys, each to the new shard that owns it
      const uint64_t row_bytes = sizeof(uint64_t) + sizeof(float) * (dim + slots * dim)
                                 + 3 * sizeof(uint32_t);  // key, floats, touches/step/clock
      for (uint32_t i = 0; i < n; ++i) {
        const auto s = spec_.shard_of_key(in.keys[i]);
        rows_[t][static_cast<std::size_t>(s)].push_back({in.keys[i], o, i});
        if (s != static_cast<int>(o)) moving_ += row_bytes;
      }
      for (uint32_t i = 0; i < in.pending_keys.size(); ++i) {
        const auto s = spec_.shard_of_key(in.pending_keys[i]);
        pending_[t][static_cast<std::size_t>(s)].push_back({in.pending_keys[i], o, i});
        if (s != static_cast<int>(o)) moving_ += sizeof(uint64_t) + sizeof(uint32_t);
      }
      for (std::size_t s = 0; s < shards; ++s) {
        row_runs_[t][s].push_back(rows_[t][s].size());
        pending_runs_[t][s].push_back(pending_[t][s].size());
      }
    }
  }
}

sparse_table_rows shard_cut::cut_table(std::size_t t, int s) const {
  const auto& cfg = spec_.model.sparse_tables[t].config;
  const std::size_t dim = cfg.dim, slots = row_state_slots(cfg.optimizer.kind);
  const auto& name = spec_.model.sparse_tables[t].name;
  const auto& old = old_;
  auto rows = rows_[t][static_cast<std::size_t>(s)];
  auto pending = pending_[t][static_cast<std::size_t>(s)];
  in_key_order(rows, row_runs_[t][static_cast<std::size_t>(s)]);
  in_key_order(pending, pending_runs_[t][static_cast<std::size_t>(s)]);
  for (std::size_t i = 1; i < rows.size(); ++i)
    if (rows[i].key == rows[i - 1].key)
      refuse("table " + name + ": key " + std::to_string(rows[i].key) + " has a row on shards "
             + std::to_string(rows[i - 1].shard) + " and " + std::to_string(rows[i].shard));
  for (std::size_t i = 1; i < pending.size(); ++i)
    if (pending[i].key == pending[i - 1].key)
      refuse("table " + name + ": key " + std::to_string(pending[i].key)
             + " is pending on two shards");
  sparse_table_rows out;
  out.keys.reserve(rows.size());
  for (const auto& r : rows) out.keys.push_back(r.key);
  gather(out.values, rows, old, t, dim, &sparse_table_rows::values);
  gather(out.state, rows, old, t, slots * dim, &sparse_table_rows::state);
  gather(out.touches, rows, old, t, 1, &sparse_table_rows::touches);
  auto rows_of = [](const sparse_table_rows& x) { return x.keys.size(); };
  if (present_in_all(old, t, [&](const sparse_table_rows& x) {
        return std::make_pair(!x.steps.empty(), rows_of(x)); }, "Adam's row steps"))
    gather(out.steps, rows, old, t, 1, &sparse_table_rows::steps);
  if (present_in_all(old, t, [&](const sparse_table_rows& x) {
        return std::make_pair(!x.clocks.empty(), rows_of(x)); }, "row clocks"))
    gather(out.clocks, rows, old, t, 1, &sparse_table_rows::clocks);
  out.pending_keys.reserve(pending.size());
  for (const auto& r : pending) out.pending_keys.push_back(r.key);
  gather(out.pending_counts, pending, old, t, 1, &sparse_table_rows::pending_counts);
  if (present_in_all(old, t, [&](const sparse_table_rows& x) {
        return std::make_pair(!x.pending_clocks.empty(), x.pending_keys.size()); },
        "pending keys' clocks"))
    gather(out.pending_clocks, pending, old, t, 1, &sparse_table_rows::pending_clocks);
  // The sketch: counters of every old shard that held a bucket now here, at their maximum.
  std::vector<std::size_t> buckets_from(old.size(), 0);
  for (std::size_t b = 0; b < spec_.bucket_shards.size(); ++b)
    if (spec_.bucket_shards[b] == s) {
      // the old owner, by the placement the old shards were written under
      const auto& before = old.front().spec.bucket_shards;
      if (b < before.size() && before[b] < old.size()) ++buckets_from[before[b]];
    }
  std::size_t most = 0;
  for (std::size_t o = 0; o < old.size(); ++o) {
    const auto& sk = old[o].sparse[t].sketch;
    if (sk.depth == 0 || buckets_from[o] == 0) continue;
    if (out.sketch.depth == 0) {
      out.sketch = sk;
      most = o;
      continue;
    }
    if (sk.depth != out.sketch.depth || sk.counters.size() != out.sketch.counters.size())
      refuse("table " + name + ": the shards' admission sketches differ in size");
    for (std::size_t i = 0; i < sk.counters.size(); ++i)
      out.sketch.counters[i] = std::max(out.sketch.counters[i], sk.counters[i]);
    if (buckets_from[o] > buckets_from[most]) {
      most = o;
      out.sketch.decay_at = sk.decay_at;
    }
  }
  if (out.sketch.depth == 0)  // a shard given no old bucket (impossible) or no sketch at all
    for (const auto& v : old)
      if (v.sparse[t].sketch.depth > 0) {
        out.sketch = v.sparse[t].sketch;
        std::fill(out.sketch.counters.begin(), out.sketch.counters.end(), uint8_t(0));
        break;
      }
  return out;
}

wire_buffer shard_cut::cut_for(int s) const { return cut(s, false); }

wire_buffer shard_cut::part_for(int s) const { return cut(s, true); }

wire_buffer shard_cut::cut(int s, bool gains_only) const {
  if (s < 0 || s >= spec_.shards) refuse("no new shard " + std::to_string(s));
  shard_checkpoint_view cut;
  cut.spec = spec_;
  cut.shard = s;
  cut.clock = old_.front().clock;
  cut.optimizer_step = step_;
  cut.newest_clock = newest_;
  for (auto id : after_->shard_blocks(s)) {
    if (gains_only && held_by_[id] == s) continue;  // it keeps the block where it is
    if (in_place_[id])
      refuse("block " + std::to_string(id) + " stays on shard " + std::to_string(s)
             + ", which did not hand it over");
    cut.blocks.push_back(values_[id]);
    cut.state.push_back(state_[id]);
  }
  for (std::size_t t = 0; t < spec_.model.sparse_tables.size(); ++t)
    cut.sparse.push_back(cut_table(t, s));
  return encode_shard_checkpoint(spec_, cut);
}

shard_cut::~shard_cut() = default;

std::vector<wire_buffer> resize_shard_files(const std::vector<wire_buffer>& saved,
                                            const train_spec& spec) {
  const shard_cut cut(saved, spec);
  std::vector<wire_buffer> out;
  for (int s = 0; s < spec.shards; ++s) out.push_back(cut.cut_for(s));
  return out;
}

} // namespace actorps
