#include "actors/roles/shard_tables.hpp"

#include "actors/protocol/errors.hpp"
#include "kernels/optimizer.hpp"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace actorps {

shard_tables::shard_tables(const train_spec& spec, int32_t shard, float max_parameter)
  : buckets_(spec.bucket_shards), shard_(shard), seed_(spec.seed), max_parameter_(max_parameter) {
  const auto& specs = spec.model.sparse_tables;
  // a delta checkpoint's tombstones: only a run that writes checkpoints needs them
  checkpointing_ = track_removed_ = spec.checkpoint_every > 0;
  for (uint32_t t = 0; t < specs.size(); ++t) {
    tables_.emplace_back(specs[t].config, spec.seed, t);
    tables_.back().set_max_parameter(max_parameter);
    tables_.back().track_removed(track_removed_ && tables_.back().evicting());
    dims_.push_back(specs[t].config.dim);
  }
  kept_.resize(static_cast<std::size_t>(spec.workers));
}

caf::error shard_tables::validate(const std::vector<sparse_rows_view>& parts, bool with_rows,
                                  float max_gradient, float* largest) const {
  float push_largest = 0;
  std::vector<bool> seen(tables_.size(), false);
  for (const auto& p : parts) {
    auto name = "table " + std::to_string(p.table);
    if (p.table >= tables_.size() || seen[p.table])
      return make_error(errc::unknown_table,
                        p.table >= tables_.size() ? name + " is not in the spec"
                                                  : name + " twice in one message");
    seen[p.table] = true;
    auto expected = with_rows ? p.key_count * dims_[p.table] : 0;
    if (p.value_count != expected)
      return make_error(errc::wrong_element_count,
                        name + ": " + std::to_string(p.value_count) + " floats for "
                          + std::to_string(p.key_count) + " keys, expected "
                          + std::to_string(expected));
    for (std::size_t i = 0; i < p.key_count; ++i)
      if (!owns(p.keys[i]))
        return make_error(errc::key_not_owned, name + ": key " + std::to_string(p.keys[i])
                                                 + " belongs to shard "
                                                 + std::to_string(shard_of_key(buckets_, p.keys[i])));
    if (!with_rows) continue;
    if (auto at = find_duplicate(p.keys, p.key_count))
      return make_error(errc::duplicate_key,
                        name + ": key " + std::to_string(p.keys[*at]) + " twice");
    if (!all_within(p.values, p.value_count, max_gradient)) {
      auto at = first_outside(p.values, p.value_count, max_gradient).value_or(0);
      return make_error(std::isfinite(p.values[at]) ? errc::value_out_of_bounds
                                                     : errc::non_finite_value,
                        gradient_refusal(p.values, p.value_count, max_gradient,
                                         name + " key "
                                           + std::to_string(p.keys[at / dims_[p.table]])));
    }
    if (largest) push_largest = std::max(push_largest, max_abs(p.values, p.value_count));
  }
  if (largest) *largest = std::max(*largest, push_largest);
  return caf::none;
}

std::size_t shard_tables::apply(const std::vector<sparse_rows_view>& parts, float lr_scale,
                                int64_t clock) {
  std::size_t refused = 0;
  for (const auto& p : parts)
    refused += tables_[p.table].apply(p.keys, p.key_count, p.values, lr_scale, clock,
                                      parts_for(p.key_count));
  return refused;
}

void shard_tables::keep(int32_t worker, wire_buffer push, std::vector<sparse_rows_view> parts) {
  kept_[worker] = {std::move(push), std::move(parts)};
}

void shard_tables::forget(int32_t worker) { kept_[worker] = {}; }

std::size_t shard_tables::apply_mean(const std::vector<int32_t>& pushers, float scale,
                                     int64_t clock) {
  std::size_t refused = 0;
  if (pushers.empty()) return refused;
  const auto inv = scale;
  absl::flat_hash_map<uint64_t, uint32_t> index;
  std::vector<uint64_t> keys;
  std::vector<float> sum;
  for (uint32_t t = 0; t < tables_.size(); ++t) {
    auto dim = dims_[t];
    index.clear();
    keys.clear();
    sum.clear();
    for (auto w : pushers) {  // worker order: the sum does not depend on arrival order
      for (const auto& p : kept_[w].parts) {
        if (p.table != t) continue;
        for (std::size_t i = 0; i < p.key_count; ++i) {
          const float* row = p.values + i * dim;
          auto [it, fresh] = index.try_emplace(p.keys[i], static_cast<uint32_t>(keys.size()));
          if (fresh) {
            keys.push_back(p.keys[i]);
            sum.insert(sum.end(), row, row + dim);
          } else {
            float* acc = sum.data() + std::size_t(it->second) * dim;
            for (uint32_t j = 0; j < dim; ++j) acc[j] += row[j];
          }
        }
      }
    }
    for (auto& v : sum) v *= inv;
    refused += tables_[t].apply(keys.data(), keys.size(), sum.data(), 1.0f, clock,
                                parts_for(keys.size()));
  }
  for (auto& k : kept_) k = {};
  return refused;
}

std::vector<sparse_table_rows> shard_tables::export_rows() const {
  std::vector<sparse_table_rows> out;
  out.reserve(tables_.size());
  for (const auto& t : tables_) out.push_back(t.export_rows(now_));
  return out;
}

std::vector<sparse_table_rows> shard_tables::delta_of(std::vector<sparse_table_rows> whole,
                                                      int64_t since, int64_t then) const {
  std::vector<sparse_table_rows> out;
  out.reserve(whole.size());
  for (std::size_t t = 0; t < whole.size() && t < tables_.size(); ++t)
    out.push_back(tables_[t].delta_of(std::move(whole[t]), since, then));
  return out;
}

std::vector<sparse_table_rows> shard_tables::changed_rows(int64_t since) const {
  std::vector<sparse_table_rows> out;
  out.reserve(tables_.size());
  for (const auto& t : tables_) out.push_back(t.changed_rows(since, now_));
  return out;
}

bool shard_tables::want_removals() {
  if (checkpointing_) return true;
  checkpointing_ = true;
  track_removed(true);
  return false;
}

void shard_tables::forget_removed(int64_t before) {
  for (auto& t : tables_) t.forget_removed(before);
}

void shard_tables::track_removed(bool on) {
  track_removed_ = on && checkpointing_;
  for (auto& t : tables_) t.track_removed(track_removed_ && t.evicting());
}

namespace {

/// sparse_table's key_filter and key_part for a move: the keys whose new shard is not `shard`,
/// each sent to its new shard's part.
struct leaving {
  const std::vector<uint16_t>* placement;
  int32_t shard;

  static bool test(uint64_t key, const void* self) {
    const auto& l = *static_cast<const leaving*>(self);
    return shard_of_key(*l.placement, key) != l.shard;
  }
  static int32_t part(uint64_t key, const void* self) {
    const auto& l = *static_cast<const leaving*>(self);
    const auto s = shard_of_key(*l.placement, key);
    return s == l.shard ? -1 : s;
  }
};

} // namespace

std::vector<std::vector<sparse_table::picked_rows>> shard_tables::pick_moving(
  const std::vector<uint16_t>& placement, int64_t resize_clock) const {
  const leaving moving{&placement, shard_};
  std::size_t shards = 0;
  for (auto s : placement) shards = std::max<std::size_t>(shards, s + 1u);
  std::vector<std::vector<sparse_table::picked_rows>> out(shards);
  for (auto& part : out) part.reserve(tables_.size());
  const bool after_copy = copied_since(placement, resize_clock) >= 0;
  for (const auto& t : tables_) {
    auto parts = after_copy ? t.pick_after_copy(&leaving::part, &moving, shards, now_)
                            : t.pick_parts(&leaving::part, &moving, shards, now_);
    for (std::size_t s = 0; s < shards; ++s) out[s].push_back(std::move(parts[s]));
  }
  return out;
}

void shard_tables::begin_copy(const std::vector<uint16_t>& placement, int64_t resize_clock) {
  copy_clock_ = resize_clock;
  copy_placement_ = placement;
  copy_table_ = copy_row_ = 0;
  for (auto& t : tables_) t.begin_copy(now_);
}

std::vector<std::vector<sparse_table::picked_rows>> shard_tables::copy_step(std::size_t budget,
                                                                            bool& done) {
  const leaving moving{&copy_placement_, shard_};
  std::size_t shards = 0;
  for (auto s : copy_placement_) shards = std::max<std::size_t>(shards, s + 1u);
  std::vector<std::vector<sparse_table::picked_rows>> out(shards);
  for (auto& part : out) part.resize(tables_.size());
  while (copy_table_ < tables_.size() && budget > 0) {
    auto& t = tables_[copy_table_];
    const auto from = copy_row_;
    auto parts = t.pick_copy(&leaving::part, &moving, shards, copy_row_, budget, now_);
    budget -= std::min<std::size_t>(budget, copy_row_ - from);
    for (std::size_t s = 0; s < shards; ++s) out[s][copy_table_] = std::move(parts[s]);
    if (copy_row_ >= t.rows()) {
      ++copy_table_;
      copy_row_ = 0;
    }
  }
  done = copy_table_ >= tables_.size();
  return out;
}

int64_t shard_tables::copied_since(const std::vector<uint16_t>& placement,
                                   int64_t resize_clock) const {
  if (!copying_for(placement, resize_clock) || tables_.empty()) return -1;
  return tables_.front().copy_since();
}

void shard_tables::end_copy() {
  copy_clock_ = -1;
  copy_placement_.clear();
  for (auto& t : tables_) t.end_copy();
}

caf::error shard_tables::stage(const shard_rows_view& copy) {
  if (copy.tables.size() != tables_.size() || copy.delta_since >= 0)
    return make_error(errc::checkpoint_failed,
                      "a copy ahead of " + std::to_string(copy.tables.size())
                        + " sparse tables (or a delta), the spec has "
                        + std::to_string(tables_.size()));
  try {
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      if (!copy.tables[t].pending_keys.empty())
        return make_error(errc::checkpoint_failed, "a copy ahead with pending counts");
      // pick_copy copies no key twice, and each old shard its own keys: none held here
      tables_[t].take_rows(copy.tables[t], copy.clock, true);
    }
  } catch (const std::exception& e) {
    return make_error(errc::checkpoint_failed, std::string("a copy ahead: ") + e.what());
  }
  return caf::none;
}

std::vector<const sparse_table*> shard_tables::tables() const {
  std::vector<const sparse_table*> out;
  for (const auto& t : tables_) out.push_back(&t);
  return out;
}

std::vector<sparse_table_rows> shard_tables::admission_states() const {
  std::vector<sparse_table_rows> out(tables_.size());
  for (std::size_t t = 0; t < tables_.size(); ++t) out[t].sketch = tables_[t].admission_state();
  return out;
}

caf::error shard_tables::move_to(const train_spec& after,
                                 const std::vector<sparse_table_rows>& incoming,
                                 const std::vector<shard_rows_view>& parts, int64_t clock,
                                 shard_tables* arriving) {
  auto refuse = [](const std::string& why) { return make_error(errc::checkpoint_failed, why); };
  const leaving moving{&after.bucket_shards, shard_};
  if (incoming.size() != tables_.size())
    return refuse("the move brings " + std::to_string(incoming.size()) + " sparse tables, the "
                  "spec has " + std::to_string(tables_.size()));
  // Checked before anything changes: each key is this shard's under `after`, and each part's
  // key was its old shard's (so no key is held here, or in two parts: their rows are taken
  // without a lookup). Arrays that do not fit, sparse_table::take_rows refuses with that
  // table left as it was, the tables before it moved: a shard's hand-over was wrong, and the
  // run fails.
  for (uint32_t t = 0; t < incoming.size(); ++t)
    for (const auto* keys : {&incoming[t].keys, &incoming[t].pending_keys})
      for (auto key : *keys)
        if (leaving::test(key, &moving))
          return refuse("sparse table " + std::to_string(t) + ": key " + std::to_string(key)
                        + " is another shard's");
  bool holds_nothing = true;
  for (const auto& t : tables_) holds_nothing = holds_nothing && t.rows() == 0 && t.pending() == 0;
  std::vector<int32_t> from;
  for (const auto& part : parts) {
    const auto& before = part.spec.bucket_shards;
    if (part.tables.size() != tables_.size() || part.shard == shard_
        || std::find(from.begin(), from.end(), part.shard) != from.end()
        || before != parts.front().spec.bucket_shards || (before != buckets_ && !holds_nothing))
      return refuse("the rows of shard " + std::to_string(part.shard) + " come twice, to their "
                    "own shard, under another placement or with another number of tables");
    from.push_back(part.shard);
    for (uint32_t t = 0; t < part.tables.size(); ++t)
      for (const auto* keys : {&part.tables[t].keys, &part.tables[t].pending_keys,
                               t < part.gone.size() ? &part.gone[t] : &part.tables[t].keys})
        for (auto key : *keys)
          if (leaving::test(key, &moving) || shard_of_key(before, key) != part.shard)
            return refuse("sparse table " + std::to_string(t) + ": key " + std::to_string(key)
                          + " of shard " + std::to_string(part.shard)
                          + "'s rows is not its to give or this shard's to take");
  }
  if (arriving && arriving->tables_.size() != tables_.size())
    return refuse("the rows copied ahead hold " + std::to_string(arriving->tables_.size())
                  + " sparse tables, the spec has " + std::to_string(tables_.size()));
  end_copy();
  try {
    for (uint32_t t = 0; t < incoming.size(); ++t) {
      tables_[t].drop_rows_of(&leaving::test, &moving);
      if (arriving) {  // the copies first: a new shard takes them as they are
        if (holds_nothing) std::swap(tables_[t], arriving->tables_[t]);
        else tables_[t].take_all(arriving->tables_[t]);
      }
      tables_[t].take_rows(incoming[t], clock);
      for (const auto& part : parts) {
        const auto& rows = part.tables[t];
        if (part.delta_since < 0 && !arriving) {  // every key new here: no lookup
          tables_[t].take_rows(rows, clock, true);
          continue;
        }
        // On top of the copies: the keys gone since, then the rows written over them, then
        // the pending counts (of keys now neither rows nor pending here).
        if (t < part.gone.size()) tables_[t].remove_keys(part.gone[t].data, part.gone[t].size);
        sparse_rows_in just_rows = rows, just_pending{};
        just_rows.pending_keys = {};
        just_rows.pending_counts = just_rows.pending_clocks = {};
        just_pending.pending_keys = rows.pending_keys;
        just_pending.pending_counts = rows.pending_counts;
        just_pending.pending_clocks = rows.pending_clocks;
        tables_[t].put_rows(just_rows, clock);
        tables_[t].take_rows(just_pending, clock);
      }
    }
  } catch (const std::exception& e) {
    return refuse(std::string("moving the sparse rows: ") + e.what());
  }
  buckets_ = after.bucket_shards;
  for (auto& k : kept_) k = kept_push{};
  kept_.resize(static_cast<std::size_t>(after.workers));
  return caf::none;
}

caf::error shard_tables::import_rows(const std::vector<sparse_table_rows>& saved,
                                     int64_t clock) {
  if (saved.size() != tables_.size())
    return make_error(errc::checkpoint_failed, "the checkpoint has " + std::to_string(saved.size())
                                                 + " sparse tables, the spec "
                                                 + std::to_string(tables_.size()));
  for (uint32_t t = 0; t < saved.size(); ++t) {
    for (auto key : saved[t].keys)
      if (!owns(key))
        return make_error(errc::checkpoint_failed, "sparse table " + std::to_string(t) + ": key "
                                                     + std::to_string(key)
                                                     + " belongs to another shard");
  }
  // Into fresh tables first, so that a bad table leaves every table as it was.
  std::vector<sparse_table> fresh;
  for (uint32_t t = 0; t < saved.size(); ++t) {
    try {
      fresh.emplace_back(tables_[t].config(), seed_, t);
      fresh[t].set_max_parameter(max_parameter_);
      fresh[t].track_removed(track_removed_ && fresh[t].evicting());
      fresh[t].import_rows(saved[t], clock);
    } catch (const std::exception& e) {
      return make_error(errc::checkpoint_failed, "sparse table " + std::to_string(t) + ": "
                                                   + e.what());
    }
  }
  tables_ = std::move(fresh);
  passed_.clear();
  sweep_table_ = 0;
  return caf::none;
}

bool shard_tables::evicting() const {
  for (const auto& t : tables_)
    if (t.evicting()) return true;
  return false;
}

uint32_t shard_tables::shortest_eviction() const {
  uint32_t shortest = 0;
  for (const auto& t : tables_) {
    auto after = t.config().evict_after;
    if (after > 0 && (shortest == 0 || after < shortest)) shortest = after;
  }
  return shortest;
}

bool shard_tables::sweep(std::size_t budget) {
  passed_.resize(tables_.size(), false);
  // Table after table, each going on where it stopped: every table's pass ends in turn.
  for (std::size_t tried = 0; tried < tables_.size() && budget > 0; ++tried) {
    auto t = sweep_table_;
    auto done = tables_[t].sweep(now_, budget);
    budget -= std::min(budget, std::max<std::size_t>(done.examined, 1));
    if (done.pass_done) {
      passed_[t] = true;
      sweep_table_ = static_cast<uint32_t>((t + 1) % tables_.size());
    }
  }
  if (!std::all_of(passed_.begin(), passed_.end(), [](bool b) { return b; })) return false;
  std::fill(passed_.begin(), passed_.end(), false);
  return true;
}

std::vector<uint64_t> shard_tables::rows() const {
  std::vector<uint64_t> out;
  for (const auto& t : tables_) out.push_back(t.rows());
  return out;
}

std::vector<uint64_t> shard_tables::peak_rows() const {
  std::vector<uint64_t> out;
  for (const auto& t : tables_) out.push_back(t.peak_rows());
  return out;
}

uint64_t shard_tables::evicted() const {
  uint64_t n = 0;
  for (const auto& t : tables_) n += t.evicted();
  return n;
}

uint64_t shard_tables::pending() const {
  uint64_t n = 0;
  for (const auto& t : tables_) n += t.pending();
  return n;
}

uint64_t shard_tables::admission_bytes() const {
  uint64_t bytes = 0;
  for (const auto& t : tables_) bytes += t.admission_bytes();
  return bytes;
}

uint64_t shard_tables::memory_bytes() const {
  uint64_t bytes = 0;
  for (const auto& t : tables_) bytes += t.memory_bytes();
  return bytes;
}

} // namespace actorps
