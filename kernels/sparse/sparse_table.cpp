#include "kernels/sparse/sparse_table.hpp"

#include "kernels/sparse/parallel_parts.hpp"

#include "actors/ps/splitmix64.hpp"

#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <utility>

namespace actorps {

namespace {

constexpr std::size_t max_rows = row_index::max_size;

/// A page is one allocation of a power of two rows and at most 32 KiB: large enough that the
/// per-page pointer costs nothing, small enough that the one partly filled page wastes little
/// (under 0.4 bytes a row from 65 536 rows on), and a row's page and place in it are a shift
/// and a mask.
constexpr std::size_t page_bytes_target = 32 * 1024;

/// Bytes abseil 20220623 allocates for a flat_hash_map of this capacity: one control byte per
/// slot plus a sentinel and Group::kWidth − 1 cloned bytes (16-wide SSE2 groups), rounded up to
/// the slot alignment, then the slots.
template <class Map>
std::size_t map_bytes(const Map& map) {
  const std::size_t capacity = map.capacity();
  if (capacity == 0) return 0;
  constexpr std::size_t slot_size = sizeof(typename Map::value_type);
  constexpr std::size_t slot_align = alignof(typename Map::value_type);
  const std::size_t control = (capacity + 1 + 15 + slot_align - 1) / slot_align * slot_align;
  return control + capacity * slot_size;
}

/// Counters stop at their largest value rather than wrap to 0.
uint32_t saturating_increment(uint32_t count) {
  return count == std::numeric_limits<uint32_t>::max() ? count : count + 1;
}

/// A global clock as rows record it: clocks before 0 as 0, beyond 2^32 − 1 as that.
uint32_t clock32(int64_t clock) {
  if (clock <= 0) return 0;
  return clock >= int64_t(std::numeric_limits<uint32_t>::max())
           ? std::numeric_limits<uint32_t>::max()
           : static_cast<uint32_t>(clock);
}

/// Capacity in `v` for `more` elements beyond its size, growing by doubling.
template <class T>
void reserve_room(std::vector<T>& v, std::size_t more) {
  if (v.size() + more > v.capacity())
    v.reserve(std::max({std::size_t(64), 2 * v.capacity(), v.size() + more}));
}

/// max_rows: the ages a pass counts one by one; older rows share the last count.
constexpr std::size_t counted_ages = 1 << 16;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("sparse_table: " + what);
}

} // namespace


std::optional<std::size_t> find_duplicate(const uint64_t* keys, std::size_t n) {
  // Workers send each shard its keys ascending: then one pass proves them distinct, without a
  // hash set of n keys (which cost 660 ms a push of 10 M keys).
  if (std::adjacent_find(keys, keys + n, std::greater_equal<uint64_t>()) == keys + n)
    return std::nullopt;
  absl::flat_hash_set<uint64_t> seen;
  seen.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!seen.insert(keys[i]).second) return i;
  }
  return std::nullopt;
}

void initial_row_values(const sparse_table_config& cfg, uint64_t seed, uint32_t table,
                        uint64_t key, float* out) {
  const uint32_t dim = cfg.dim;
  if (cfg.init == row_init::zeros) {
    std::fill(out, out + dim, 0.0f);
    return;
  }
  splitmix64 rng(splitmix64_mix(splitmix64_mix(splitmix64_mix(seed) ^ table) ^ key));
  const double scale = cfg.scale;
  if (cfg.init == row_init::uniform) {
    for (uint32_t i = 0; i < dim; ++i) {
      out[i] = static_cast<float>((2.0 * rng.next_unit() - 1.0) * scale);
    }
    return;
  }
  // Box–Muller, two values per pair of draws; u1 in (0, 1] keeps log finite.
  constexpr double two_pi = 6.283185307179586476925286766559;
  for (uint32_t i = 0; i < dim; i += 2) {
    const double u1 = static_cast<double>((rng.next() >> 11) + 1) * 0x1p-53;
    const double u2 = static_cast<double>(rng.next() >> 11) * 0x1p-53;
    const double radius = std::sqrt(-2.0 * std::log(u1)) * scale;
    out[i] = static_cast<float>(radius * std::cos(two_pi * u2));
    if (i + 1 < dim) out[i + 1] = static_cast<float>(radius * std::sin(two_pi * u2));
  }
}

sparse_table::sparse_table(const sparse_table_config& cfg, uint64_t seed, uint32_t table)
  : cfg_(cfg), seed_(seed), table_(table) {
  auto why = invalid_table_config(cfg);
  require(why.empty(), why);
  slots_ = row_state_slots(cfg.optimizer.kind);
  counts_steps_ = row_counts_steps(cfg.optimizer.kind);
  stride_ = meta_floats + cfg.dim * (1 + slots_);  // checked to fit
  const std::size_t fit = page_bytes_target / (std::size_t(stride_) * sizeof(float));
  page_shift_ = 0;
  while ((std::size_t(2) << page_shift_) <= fit) ++page_shift_;
  rows_per_page_ = uint32_t(1) << page_shift_;
  page_mask_ = rows_per_page_ - 1;
  if (cfg.admission_memory > 0)
    sketch_ = std::make_unique<admission_sketch>(cfg.admission_memory,
                                                 splitmix64_mix(seed) ^ table);
}

std::size_t sparse_table::pending() const {
  if (!sketch_) return pending_.size();
  return (sketch_->nonzero() + admission_sketch::default_depth - 1)
         / admission_sketch::default_depth;
}

std::size_t sparse_table::admission_bytes() const {
  if (sketch_) return sketch_->memory_bytes();
  return map_bytes(pending_) + pending_keys_.capacity() * sizeof(uint64_t) +
         pending_clocks_.capacity() * sizeof(uint32_t);
}

std::size_t sparse_table::memory_bytes() const {
  const std::size_t page_bytes = std::size_t(rows_per_page_) * stride_ * sizeof(float);
  return sizeof(*this) + pages_.size() * page_bytes +
         pages_.capacity() * sizeof(decltype(pages_)::value_type) + index_.memory_bytes() +
         admission_bytes() + steps_.capacity() * sizeof(uint32_t) +
         ages_.capacity() * sizeof(uint64_t);
}

void sparse_table::touch_row(uint32_t index, uint32_t floats) const {
  // Loads, not __builtin_prefetch: on the machine this was measured on (a virtualised AMD
  // EPYC) prefetches of rows in a 1+ GB table changed nothing — they miss the TLB and are
  // dropped — while these loads, which out-of-order execution overlaps across the block, made
  // a dim-16 Adagrad update pass 2.5x faster.
  const volatile char* first = reinterpret_cast<const volatile char*>(row_start(index));
  const std::size_t bytes = std::size_t(meta_floats + floats) * sizeof(float);
  for (std::size_t offset = 0; offset < bytes && offset < 512; offset += 64) (void)first[offset];
  (void)first[bytes - 1];
}

void sparse_table::read(const uint64_t* keys, std::size_t n, float* out, int64_t now,
                        std::size_t parts) const {
  const uint32_t at = clock32(now);
  if (parts <= 1) return read_range(keys, n, out, at);
  const std::size_t dim = cfg_.dim;
  run_in_parts(n, parts, [&](std::size_t, std::size_t begin, std::size_t end) {
    read_range(keys + begin, end - begin, out + begin * dim, at);
  });
}

void sparse_table::read_range(const uint64_t* keys, std::size_t n, float* out,
                              uint32_t at) const {
  const uint32_t dim = cfg_.dim;
  // A pipeline rather than apply()'s blocks: while key i's row is copied, key i + ahead's row
  // and key i + 2 ahead's slot are prefetched, so misses are always under way. A read does
  // little per key, so the prefetches' address translations (a TLB miss each, in a large
  // table) overlap its work; apply()'s longer updates would wait for each, and it keeps the
  // blocks. actorps_bench_sparse_apply's read pass, 10 M rows × dim 1: 70 -> 52 ns a row;
  // 100 k-key reads of 1 M rows × dim 16: 84 -> 54 (a virtualised Intel Xeon; touch_row says
  // why apply() loads rows instead, as measured on an AMD EPYC).
  constexpr std::size_t ring = 4 * read_ahead, wrap = ring - 1;  // holds keys i … i + 2 ahead
  static_assert((ring & wrap) == 0, "the ring of hashes is a power of two");
  uint64_t hashes[ring];
  for (std::size_t i = 0; i < std::min(n, 2 * read_ahead); ++i) {
    hashes[i] = row_index::hash(keys[i]);
    index_.prefetch(hashes[i]);
  }
  for (std::size_t i = 0; i < std::min(n, read_ahead); ++i) prefetch_row(hashes[i], dim);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + 2 * read_ahead < n) {
      const uint64_t h = row_index::hash(keys[i + 2 * read_ahead]);
      hashes[(i + 2 * read_ahead) & wrap] = h;
      index_.prefetch(h);
    }
    if (i + read_ahead < n) prefetch_row(hashes[(i + read_ahead) & wrap], dim);
    const uint32_t found = index_.find(keys[i], hashes[i & wrap], key_of());
    float* into = out + i * dim;
    if (found != row_index::npos && !stale(found, at)) {
      std::memcpy(into, row(found), dim * sizeof(float));
    } else if (cfg_.admit_after > 1) {
      std::fill(into, into + dim, 0.0f);
    } else {
      initial_row_values(cfg_, seed_, table_, keys[i], into);
    }
  }
}

void sparse_table::prefetch_row(uint64_t h, uint32_t floats) const {
  const uint32_t likely = index_.likely_row(h);
  if (likely == row_index::npos) return;
  const char* first = reinterpret_cast<const char*>(row_start(likely));
  const std::size_t bytes = std::size_t(meta_floats + floats) * sizeof(float);
  for (std::size_t offset = 0; offset < bytes && offset < 512; offset += 64)
    __builtin_prefetch(first + offset);
  __builtin_prefetch(first + bytes - 1);
}

void sparse_table::ensure_page_for(uint32_t index) {
  if (index / rows_per_page_ < pages_.size()) return;
  // Left uninitialised (no make_unique): a page costs memory only as its rows are written.
  pages_.emplace_back(new float[std::size_t(rows_per_page_) * stride_]);
}

void sparse_table::create_row(uint64_t key, uint32_t index) {
  std::memcpy(row_start(index), &key, sizeof key);
  float* values = row(index);
  initial_row_values(cfg_, seed_, table_, key, values);
  init_row_state(cfg_.optimizer, values, values + cfg_.dim, cfg_.dim);
}

void sparse_table::ensure_pages_to(uint32_t index) {
  while (pages_.size() <= index / rows_per_page_)
    pages_.emplace_back(new float[std::size_t(rows_per_page_) * stride_]);
}

void sparse_table::reserve_rows(std::size_t more) {
  if (counts_steps_) reserve_room(steps_, more);
}

void sparse_table::remove_row(uint32_t index, uint32_t clock) {
  if (track_removed_) removed_.emplace_back(row_key(index), clock);
  unlink_row(index);
  ++evicted_;
}

void sparse_table::unlink_row(uint32_t index) {
  const auto last = static_cast<uint32_t>(index_.size() - 1);
  if (copying_) {  // a copied key that goes is the copy's to remove; the last row's marks move
    if (copied(index)) copied_gone_.insert(row_key(index));
    for (auto* bits : {&copied_, &changed_}) {
      set_bit(*bits, index, bit(*bits, last));
      set_bit(*bits, last, false);
    }
  }
  index_.erase(row_key(index), key_of());  // the last row's key now finds `index`
  if (index != last) {
    std::memcpy(row_start(index), row_start(last), std::size_t(stride_) * sizeof(float));
    if (counts_steps_) steps_[index] = steps_[last];
  }
  if (counts_steps_) steps_.pop_back();
  // Pages no longer needed go back, but one spare: rows going and coming around a page's
  // boundary would otherwise free and allocate it each time.
  const std::size_t needed = (index_.size() + rows_per_page_ - 1) / rows_per_page_;
  while (pages_.size() > needed + 1) pages_.pop_back();
}

void sparse_table::set_max_parameter(float bound) {
  auto why = invalid_bound(bound);
  require(why.empty(), "max_parameter " + why);
  max_parameter_ = bound;
}

bool sparse_table::update_row(uint32_t index, const float* grad, float lr_scale,
                              std::vector<float>& saved) {
  note_change(index);
  const uint32_t step = counts_steps_ ? saturating_increment(steps_[index]) : 1;
  float* values = row(index);
  const uint32_t floats = stride_ - meta_floats;
  // The row is in cache (find_block touched it): keeping a copy to put back costs little next
  // to the lookup, and makes a refused update leave the row exactly as it was.
  if (saved.size() != floats) saved.resize(floats);
  std::memcpy(saved.data(), values, std::size_t(floats) * sizeof(float));
  apply_row_update(cfg_.optimizer, lr_scale, step, values, grad, values + cfg_.dim, cfg_.dim);
  if (!all_within(values, cfg_.dim, max_parameter_)
      || !all_within(values + cfg_.dim, floats - cfg_.dim, std::numeric_limits<float>::max())) {
    std::memcpy(values, saved.data(), std::size_t(floats) * sizeof(float));
    return false;
  }
  set_row_touches(index, saturating_increment(row_touches(index)));
  if (counts_steps_) steps_[index] = step;
  if (row_clock(index) < clock_) set_row_clock(index, clock_);
  return true;
}

bool sparse_table::push_missing(uint64_t key, uint64_t h, const float* grad, float lr_scale) {
  if (index_.size() == max_rows && index_.find(key, h, key_of()) == row_index::npos) {
    throw std::length_error("sparse_table: table " + std::to_string(table_) +
                            " already holds the most rows one table can (2^32 - 2)");
  }
  uint32_t touches = 0;  // bumped to 1 by update_row; with admission, to admit_after
  auto counted = pending_.end();
  if (cfg_.admit_after > 1 && index_.find(key, h, key_of()) == row_index::npos) {
    if (count_pending(key, counted) < cfg_.admit_after) return true;  // gradient dropped
    touches = cfg_.admit_after - 1;
  }
  // Every allocation before the index changes (its own growth included: it allocates before
  // it changes), so a throw leaves no key without its row.
  const auto index = static_cast<uint32_t>(index_.size());
  ensure_page_for(index);
  reserve_rows(1);
  // One probe: an earlier repeat of the key in this push may have created the row already.
  const auto [at, created] = index_.insert(key, h, key_of());
  if (created) {
    create_row(key, at);
    set_row_touches(at, touches);
    if (counts_steps_) steps_.push_back(0);
    set_row_clock(at, clock_);
    if (counted != pending_.end()) erase_pending(counted);
  }
  return update_row(at, grad, lr_scale, saved_row_);
}

uint32_t sparse_table::count_pending(uint64_t key,
                                     absl::flat_hash_map<uint64_t, pending_ref>::iterator& entry) {
  if (sketch_) return sketch_->add(key);
  const bool clocked = pending_clocked();
  if (clocked) {  // room first: a throw after the map changed would leave an entry without them
    reserve_room(pending_keys_, 1);
    reserve_room(pending_clocks_, 1);
  }
  auto [it, fresh] = pending_.try_emplace(
    key, pending_ref{0, clocked ? static_cast<uint32_t>(pending_keys_.size()) : clock_});
  if (!clocked) {
    if (!fresh) it->second.index = std::max(it->second.index, clock_);  // its last clock
  } else {
    if (fresh) {
      pending_keys_.push_back(key);
      pending_clocks_.push_back(clock_);
    } else {
      // Quiet for evict_after clocks: counted anew, whether or not the sweep removed it yet.
      if (pending_stale(it->second.index, clock_)) it->second.count = 0;
      pending_clocks_[it->second.index] = std::max(pending_clocks_[it->second.index], clock_);
    }
  }
  entry = it;
  return ++it->second.count;
}

void sparse_table::erase_pending(absl::flat_hash_map<uint64_t, pending_ref>::iterator entry) {
  if (pending_clocked()) {
    const uint32_t index = entry->second.index;
    const auto last = static_cast<uint32_t>(pending_keys_.size() - 1);
    if (index != last) {
      pending_keys_[index] = pending_keys_[last];
      pending_clocks_[index] = pending_clocks_[last];
      pending_.find(pending_keys_[index])->second.index = index;
    }
    pending_keys_.pop_back();
    pending_clocks_.pop_back();
  }
  pending_.erase(entry);
}

void sparse_table::update_found(const uint64_t* keys, std::size_t begin, std::size_t end,
                                const float* grads, float lr_scale, found_pass& pass,
                                std::vector<float>& saved) {
  // A stale row (evict_after) is evicted as it is found: without admission it starts over in
  // place; with admission its key joins the missing ones, its row removed before they are
  // created (no row found is used after that).
  const bool evicting = cfg_.evict_after > 0;
  const bool admission = cfg_.admit_after > 1;
  const uint32_t dim = cfg_.dim;
  uint32_t found[lookup_block];
  for (std::size_t start = begin; start < end; start += lookup_block) {
    const std::size_t count = std::min(lookup_block, end - start);
    find_block(keys + start, count, stride_ - meta_floats, found);
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t at = start + j;
      if (found[j] == row_index::npos) {
        pass.missing.push_back(at);
        continue;
      }
      const uint32_t index = found[j];
      if (evicting && stale(index, clock_)) {
        if (admission) {  // counted as evicted when removed, in apply()
          pass.missing.push_back(at);
          ++pass.stale_rows;
          continue;
        }
        ++evicted_;
        if (track_removed_) removed_.emplace_back(keys[at], clock_);  // starts over
        note_change(index);
        create_row(keys[at], index);
        set_row_touches(index, 0);
        if (counts_steps_) steps_[index] = 0;
        set_row_clock(index, clock_);
      }
      if (!update_row(index, grads + at * dim, lr_scale, saved)) ++pass.refused;
    }
  }
}

std::size_t sparse_table::apply(const uint64_t* keys, std::size_t n, const float* grads,
                                float lr_scale, int64_t clock, std::size_t parts) {
  if (!(std::isfinite(lr_scale) && lr_scale >= 0)) {
    throw std::invalid_argument("sparse_table: lr_scale must be finite and >= 0, got " +
                                std::to_string(lr_scale));
  }
  const uint32_t dim = cfg_.dim;
  clock_ = clock32(clock);
  // Rows that exist are updated in the first pass, and the keys without a row collected for
  // the second: the index does not change meanwhile, so the rows found stay valid. Each key's
  // result does not depend on the others', so this order gives the same values as one key
  // after another (a repeated key's occurrences are all missing or all found, and keep their
  // order). For the same reason the first pass may run in parts at once; the second takes
  // each part's missing positions in order of part, the push's order.
  if (cfg_.evict_after > 0 || copying_) parts = 1;  // their bookkeeping is the table's own
  found_pass whole;                  // one part: no allocation beyond its missing positions
  std::vector<found_pass> in_parts;
  if (parts <= 1) {
    update_found(keys, 0, n, grads, lr_scale, whole, saved_row_);
  } else {
    in_parts.resize(parts);
    run_in_parts(n, parts, [&](std::size_t part, std::size_t begin, std::size_t end) {
      std::vector<float> saved;
      update_found(keys, begin, end, grads, lr_scale, in_parts[part], saved);
    });
  }
  const found_pass* const passes = in_parts.empty() ? &whole : in_parts.data();
  const std::size_t pass_count = in_parts.empty() ? 1 : in_parts.size();
  std::size_t refused = 0, missing = 0;
  for (std::size_t p = 0; p < pass_count; ++p) {
    refused += passes[p].refused;
    missing += passes[p].missing.size();
  }
  if (missing == 0) return refused;
  if (passes[0].stale_rows > 0) {  // one part: the table evicts
    for (auto at : passes[0].missing) {
      const uint32_t index = index_.find(keys[at], key_of());
      if (index != row_index::npos) remove_row(index, clock_);
    }
  }
  // Room for every new row at once: a push of 10 M fresh keys would otherwise rehash the index
  // through a dozen growths. With admission most may stay pending.
  if (cfg_.admit_after <= 1) {
    index_.reserve(std::min<std::size_t>(max_rows, index_.size() + missing), key_of());
    reserve_rows(missing);
  }
  for (std::size_t p = 0; p < pass_count; ++p) {
    const std::vector<std::size_t>& at_of = passes[p].missing;
    for (std::size_t start = 0; start < at_of.size(); start += lookup_block) {
      const std::size_t count = std::min(lookup_block, at_of.size() - start);
      uint64_t hashes[lookup_block];
      for (std::size_t j = 0; j < count; ++j) {
        hashes[j] = row_index::hash(keys[at_of[start + j]]);
        index_.prefetch(hashes[j]);
      }
      for (std::size_t j = 0; j < count; ++j) {
        const std::size_t at = at_of[start + j];
        if (!push_missing(keys[at], hashes[j], grads + at * dim, lr_scale)) ++refused;
      }
    }
  }
  peak_rows_ = std::max(peak_rows_, index_.size());
  return refused;
}

sweep_result sparse_table::sweep(int64_t now, std::size_t budget) {
  sweep_result done;
  if (!evicting()) {
    done.pass_done = true;
    return done;
  }
  const uint32_t at = clock32(now);
  const bool bounded = cfg_.max_rows > 0;
  if (bounded && ages_.empty()) ages_.assign(counted_ages, 0);
  while (done.examined < budget && sweep_at_ < index_.size()) {
    ++done.examined;
    const uint32_t last = row_clock(sweep_at_);
    const uint32_t age = at > last ? at - last : 0;
    if ((cfg_.evict_after > 0 && age > cfg_.evict_after) || (bounded && age >= evict_age_)) {
      remove_row(sweep_at_, at);  // the last row moves here: looked at next
      ++done.evicted;
      continue;
    }
    if (bounded) ++ages_[std::min<std::size_t>(age, counted_ages - 1)];
    ++sweep_at_;
  }
  // Then the exact pending counts gone quiet, once the rows' pass is through.
  const bool rows_done = sweep_at_ >= index_.size();
  if (rows_done && pending_clocked()) {
    while (done.examined < budget && pending_sweep_at_ < pending_keys_.size()) {
      ++done.examined;
      if (pending_stale(pending_sweep_at_, at)) {
        if (track_removed_) removed_pending_.emplace_back(pending_keys_[pending_sweep_at_], at);
        erase_pending(pending_.find(pending_keys_[pending_sweep_at_]));  // the last moves here
        ++done.pending_dropped;
        continue;
      }
      ++pending_sweep_at_;
    }
  }
  done.pass_done = rows_done && pending_sweep_at_ >= pending_keys_.size();
  if (done.pass_done) {
    sweep_at_ = 0;
    pending_sweep_at_ = 0;
    if (bounded) plan_row_bound(at);
  }
  return done;
}

void sparse_table::plan_row_bound(uint32_t) {
  // The rows the pass kept, by age: the oldest ones beyond max_rows go in the next pass.
  evict_age_ = std::numeric_limits<uint32_t>::max();
  uint64_t kept = 0;
  for (auto n : ages_) kept += n;
  if (kept > cfg_.max_rows) {
    uint64_t excess = kept - cfg_.max_rows, oldest = 0;
    for (std::size_t age = counted_ages; age-- > 0;) {
      oldest += ages_[age];
      if (oldest >= excess) {
        // Rows of this age too when that gets closer to the bound than sparing them.
        evict_age_ = static_cast<uint32_t>(oldest - excess <= excess - (oldest - ages_[age])
                                             ? age : age + 1);
        break;
      }
    }
  }
  std::fill(ages_.begin(), ages_.end(), 0);
}

void sparse_table::find_block(const uint64_t* keys, std::size_t count, uint32_t row_floats,
                              uint32_t* found) const {
  // Every lookup of the block is under way before any is waited for, so the cache misses
  // overlap instead of queueing: the index's slots, then the rows their tags point to (loads,
  // as in touch_row), then the keys compared in rows now in cache, their floats loaded.
  uint64_t hashes[lookup_block];
  for (std::size_t j = 0; j < count; ++j) {
    hashes[j] = row_index::hash(keys[j]);
    index_.prefetch(hashes[j]);
  }
  for (std::size_t j = 0; j < count; ++j) {
    const uint32_t likely = index_.likely_row(hashes[j]);
    if (likely != row_index::npos)
      (void)*reinterpret_cast<const volatile char*>(row_start(likely));
  }
  for (std::size_t j = 0; j < count; ++j) found[j] = index_.find(keys[j], hashes[j], key_of());
  for (std::size_t j = 0; j < count; ++j) {
    if (found[j] != row_index::npos) touch_row(found[j], row_floats);
  }
  if (steps_.empty()) return;
  const volatile uint32_t* steps = steps_.data();
  for (std::size_t j = 0; j < count; ++j) {
    if (found[j] != row_index::npos) (void)steps[found[j]];
  }
}

sparse_table_rows sparse_table::export_rows(int64_t now) const {
  const uint32_t at = clock32(now);
  std::vector<std::pair<uint64_t, uint32_t>> by_key;
  by_key.reserve(index_.size());
  for (uint32_t index = 0; index < index_.size(); ++index)
    if (!stale(index, at)) by_key.emplace_back(row_key(index), index);
  std::sort(by_key.begin(), by_key.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  auto out = export_indices(by_key);
  export_admission(out, at);
  return out;
}

sparse_table_rows sparse_table::export_rows_of(key_filter moving, const void* context,
                                               int64_t now) const {
  struct picked {
    key_filter moving;
    const void* context;
    static int32_t part(uint64_t key, const void* self) {
      const auto& p = *static_cast<const picked*>(self);
      return p.moving(key, p.context) ? 0 : -1;
    }
  } pick{moving, context};
  auto out = std::move(export_parts(&picked::part, &pick, 1, now).front());
  out.sketch = admission_state();
  return out;
}

std::vector<sparse_table_rows> sparse_table::export_parts(key_part part, const void* context,
                                                          std::size_t parts,
                                                          int64_t now) const {
  auto picked = pick_parts(part, context, parts, now);
  std::vector<sparse_table_rows> out(parts);
  for (std::size_t p = 0; p < parts; ++p) {
    out[p] = export_indices(picked[p].rows);
    out[p].pending_keys = std::move(picked[p].pending.pending_keys);
    out[p].pending_counts = std::move(picked[p].pending.pending_counts);
    out[p].pending_clocks = std::move(picked[p].pending.pending_clocks);
  }
  return out;
}

std::vector<sparse_table::picked_rows> sparse_table::pick_parts(key_part part,
                                                                const void* context,
                                                                std::size_t parts,
                                                                int64_t now) const {
  return pick(part, context, parts, now, false);
}

std::vector<sparse_table::picked_rows> sparse_table::pick(key_part part, const void* context,
                                                          std::size_t parts, int64_t now,
                                                          bool changed_only) const {
  const uint32_t at = clock32(now);
  std::vector<picked_rows> out(parts);
  for (uint32_t index = 0; index < index_.size(); ++index) {
    if (stale(index, at)) continue;
    if (changed_only && copied(index) && !bit(changed_, index)) continue;  // its copy is right
    const auto p = part(row_key(index), context);
    if (p >= 0 && static_cast<std::size_t>(p) < parts)
      out[static_cast<std::size_t>(p)].rows.emplace_back(row_key(index), index);
  }
  for (auto& o : out)
    std::sort(o.rows.begin(), o.rows.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  // The pending counts, in one pass too.
  std::vector<std::vector<std::pair<uint64_t, pending_ref>>> pending(parts);
  const bool clocked = pending_clocked();
  for (const auto& entry : pending_) {
    if (clocked && pending_stale(entry.second.index, at)) continue;
    const auto p = part(entry.first, context);
    if (p >= 0 && static_cast<std::size_t>(p) < parts)
      pending[static_cast<std::size_t>(p)].push_back(entry);
  }
  for (std::size_t p = 0; p < parts; ++p) write_pending(out[p].pending, pending[p]);
  return out;
}

void sparse_table::copy_rows(const std::vector<std::pair<uint64_t, uint32_t>>& rows,
                             const rows_out& out) const {
  const uint32_t dim = cfg_.dim;
  const std::size_t state_floats = std::size_t(slots_) * dim;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto& [key, index] = rows[r];
    const float* values = row(index);
    out.keys[r] = key;
    std::memcpy(out.values + r * dim, values, dim * sizeof(float));
    std::memcpy(out.state + r * state_floats, values + dim, state_floats * sizeof(float));
    out.touches[r] = row_touches(index);
    out.clocks[r] = row_clock(index);
    if (counts_steps_) out.steps[r] = steps_[index];
  }
}

admission_sketch_state sparse_table::admission_state() const {
  return sketch_ ? sketch_->save() : admission_sketch_state{};
}

sparse_table_rows sparse_table::export_indices(
  const std::vector<std::pair<uint64_t, uint32_t>>& by_key) const {
  const std::size_t n = by_key.size();
  sparse_table_rows out;
  out.keys.resize(n);
  out.values.resize(n * cfg_.dim);
  out.state.resize(n * slots_ * cfg_.dim);
  out.touches.resize(n);
  out.clocks.resize(n);
  if (counts_steps_) out.steps.resize(n);
  copy_rows(by_key, {out.keys.data(), out.values.data(), out.state.data(), out.touches.data(),
                     counts_steps_ ? out.steps.data() : nullptr, out.clocks.data()});
  return out;
}

std::size_t sparse_table::drop_rows_of(key_filter moving, const void* context) {
  end_copy();  // the rows slide: marks would no longer match them
  // The rows kept slide to the front in their order and the index is built again: a move drops
  // a large share of the rows, where an erase each (two lookups, cache misses both) costs more
  // than a rebuild whose misses overlap. The new index is allocated before a row moves.
  const auto n = static_cast<uint32_t>(index_.size());
  std::vector<bool> leaves(n);  // each row's key tested once
  uint32_t kept = 0;
  for (uint32_t index = 0; index < n; ++index) {
    leaves[index] = moving(row_key(index), context);
    kept += leaves[index] ? 0 : 1;
  }
  const std::size_t dropped = n - kept;
  if (dropped > 0) {
    row_index fresh;
    fresh.reserve(kept, key_of());  // no rows yet: reads no key
    uint32_t to = 0;
    for (uint32_t index = 0; index < n; ++index) {
      if (leaves[index]) continue;
      if (to != index) {
        std::memcpy(row_start(to), row_start(index), std::size_t(stride_) * sizeof(float));
        if (counts_steps_) steps_[to] = steps_[index];
      }
      ++to;
    }
    if (counts_steps_) steps_.resize(kept);
    fresh.append(kept, key_of());  // reserved: cannot throw
    index_ = std::move(fresh);
    const std::size_t needed = (index_.size() + rows_per_page_ - 1) / rows_per_page_;
    while (pages_.size() > needed + 1) pages_.pop_back();  // one spare, as unlink_row keeps
  }
  for (auto entry = pending_.begin(); entry != pending_.end();) {
    auto at = entry++;  // erasing leaves the other entries where they are
    if (moving(at->first, context)) erase_pending(at);
  }
  sweep_at_ = 0;  // a pass goes on over the rows left
  pending_sweep_at_ = 0;
  return dropped;
}

void sparse_table::export_admission(sparse_table_rows& out, uint32_t at) const {
  std::vector<std::pair<uint64_t, pending_ref>> pending;
  pending.reserve(pending_.size());
  const bool clocked = pending_clocked();
  for (const auto& entry : pending_)
    if (!(clocked && pending_stale(entry.second.index, at))) pending.push_back(entry);
  write_pending(out, pending);
  out.sketch = admission_state();
}

void sparse_table::write_pending(sparse_table_rows& out,
                                 std::vector<std::pair<uint64_t, pending_ref>>& entries) const {
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const bool clocked = pending_clocked();
  out.pending_keys.reserve(entries.size());
  out.pending_counts.reserve(entries.size());
  if (clocked) out.pending_clocks.reserve(entries.size());
  for (const auto& [key, ref] : entries) {
    out.pending_keys.push_back(key);
    out.pending_counts.push_back(ref.count);
    if (clocked) out.pending_clocks.push_back(pending_clocks_[ref.index]);
  }
}

sparse_table_rows sparse_table::delta_of(sparse_table_rows whole, int64_t since,
                                         int64_t then) const {
  const uint32_t from = clock32(since), at = clock32(then);
  std::vector<uint64_t> removed;
  for (const auto& [key, clock] : removed_)
    if (clock >= from) removed.push_back(key);
  // rows stale at `then` (not in `whole`) that nothing has removed or started over since
  if (cfg_.evict_after > 0)
    for (uint32_t index = 0; index < index_.size(); ++index)
      if (stale(index, at)) removed.push_back(row_key(index));
  std::sort(removed.begin(), removed.end());
  removed.erase(std::unique(removed.begin(), removed.end()), removed.end());
  const uint32_t dim = cfg_.dim;
  const std::size_t state_floats = std::size_t(slots_) * dim;
  sparse_table_rows out;
  std::size_t gone = 0;
  for (std::size_t r = 0; r < whole.keys.size(); ++r) {
    const uint64_t key = whole.keys[r];
    while (gone < removed.size() && removed[gone] < key)
      out.removed_keys.push_back(removed[gone++]);
    if (gone < removed.size() && removed[gone] == key) ++gone;  // it has a row: not gone
    if (whole.clocks[r] < from) continue;
    out.keys.push_back(key);
    out.values.insert(out.values.end(), whole.values.begin() + r * dim,
                      whole.values.begin() + (r + 1) * dim);
    out.state.insert(out.state.end(), whole.state.begin() + r * state_floats,
                     whole.state.begin() + (r + 1) * state_floats);
    out.touches.push_back(whole.touches[r]);
    out.clocks.push_back(whole.clocks[r]);
    if (counts_steps_) out.steps.push_back(whole.steps[r]);
  }
  out.removed_keys.insert(out.removed_keys.end(), removed.begin() + gone, removed.end());
  if (sketch_) {  // bounded by admission_memory: written whole
    out.sketch = std::move(whole.sketch);
    return out;
  }
  // The exact pending entries counted since, and tombstones for those dropped since (swept, or
  // stale at `then`). Admitted ones need none: their rows are in the delta (or tombstoned).
  out.pending_changes_only = true;
  std::vector<uint64_t> dropped;
  for (const auto& [key, clock] : removed_pending_)
    if (clock >= from) dropped.push_back(key);
  if (pending_clocked())
    for (const auto& entry : pending_)
      if (pending_stale(entry.second.index, at)) dropped.push_back(entry.first);
  std::sort(dropped.begin(), dropped.end());
  dropped.erase(std::unique(dropped.begin(), dropped.end()), dropped.end());
  const bool clocks = !whole.pending_clocks.empty();
  std::size_t left = 0;
  for (std::size_t p = 0; p < whole.pending_keys.size(); ++p) {
    const uint64_t key = whole.pending_keys[p];
    while (left < dropped.size() && dropped[left] < key)
      out.removed_pending.push_back(dropped[left++]);
    if (left < dropped.size() && dropped[left] == key) ++left;  // pending at `then`: not gone
    // Its last clock as exported (with eviction), else the table's: a push since `then` only
    // raises it, and has a clock >= since (the state at `since` held every earlier push); a
    // key no longer pending was admitted since `then`: included.
    uint32_t clock = std::numeric_limits<uint32_t>::max();
    if (clocks) {
      clock = whole.pending_clocks[p];
    } else if (auto it = pending_.find(key); it != pending_.end()) {
      clock = pending_clock(it->second);
    }
    if (clock < from) continue;
    out.pending_keys.push_back(key);
    out.pending_counts.push_back(whole.pending_counts[p]);
    if (clocks) out.pending_clocks.push_back(clock);
  }
  out.removed_pending.insert(out.removed_pending.end(), dropped.begin() + left, dropped.end());
  return out;
}

sparse_table_rows sparse_table::changed_rows(int64_t since, int64_t now) const {
  const uint32_t from = clock32(since), at = clock32(now);
  // One look at each row's clock; only the rows changed since (and the stale) go further.
  std::vector<std::pair<uint64_t, uint32_t>> by_key;
  std::vector<uint64_t> removed;
  for (const auto& [key, clock] : removed_)
    if (clock >= from) removed.push_back(key);
  for (uint32_t index = 0; index < index_.size(); ++index) {
    if (stale(index, at)) removed.push_back(row_key(index));
    else if (row_clock(index) >= from) by_key.emplace_back(row_key(index), index);
  }
  std::sort(by_key.begin(), by_key.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::sort(removed.begin(), removed.end());
  removed.erase(std::unique(removed.begin(), removed.end()), removed.end());
  // a key removed since that has a row again (not stale) is not gone
  removed.erase(std::remove_if(removed.begin(), removed.end(),
                               [&](uint64_t key) {
                                 const uint32_t index = index_.find(key, key_of());
                                 return index != row_index::npos && !stale(index, at);
                               }),
                removed.end());
  const uint32_t dim = cfg_.dim;
  const std::size_t state_floats = std::size_t(slots_) * dim;
  sparse_table_rows out;
  out.keys.reserve(by_key.size());
  out.values.resize(by_key.size() * dim);
  out.state.resize(by_key.size() * state_floats);
  for (std::size_t r = 0; r < by_key.size(); ++r) {
    const auto& [key, index] = by_key[r];
    const float* values = row(index);
    out.keys.push_back(key);
    std::memcpy(out.values.data() + r * dim, values, dim * sizeof(float));
    std::memcpy(out.state.data() + r * state_floats, values + dim, state_floats * sizeof(float));
    out.touches.push_back(row_touches(index));
    out.clocks.push_back(row_clock(index));
    if (counts_steps_) out.steps.push_back(steps_[index]);
  }
  out.removed_keys = std::move(removed);
  if (sketch_) {  // bounded by admission_memory: written whole
    out.sketch = sketch_->save();
    return out;
  }
  // As delta_of: the exact pending entries counted since, tombstones for those dropped since.
  out.pending_changes_only = true;
  const bool clocked = pending_clocked();
  auto pending_now = [&](const pending_ref& ref) {
    return !(clocked && pending_stale(ref.index, at));
  };
  std::vector<std::pair<uint64_t, pending_ref>> pending;
  std::vector<uint64_t> dropped;
  for (const auto& [key, clock] : removed_pending_)
    if (clock >= from) dropped.push_back(key);
  for (const auto& entry : pending_) {
    if (!pending_now(entry.second)) dropped.push_back(entry.first);
    else if (pending_clock(entry.second) >= from) pending.push_back(entry);
  }
  std::sort(pending.begin(), pending.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [key, ref] : pending) {
    out.pending_keys.push_back(key);
    out.pending_counts.push_back(ref.count);
    if (clocked) out.pending_clocks.push_back(pending_clocks_[ref.index]);
  }
  std::sort(dropped.begin(), dropped.end());
  dropped.erase(std::unique(dropped.begin(), dropped.end()), dropped.end());
  dropped.erase(std::remove_if(dropped.begin(), dropped.end(),
                               [&](uint64_t key) {
                                 auto it = pending_.find(key);
                                 return it != pending_.end() && pending_now(it->second);
                               }),
                dropped.end());
  out.removed_pending = std::move(dropped);
  return out;
}

void sparse_table::track_removed(bool on) {
  track_removed_ = on;
  if (!on) {
    removed_ = {};
    removed_pending_ = {};
  }
}

void sparse_table::forget_removed(int64_t before) {
  const uint32_t from = clock32(before);
  auto old = [&](const auto& r) { return r.second < from; };
  removed_.erase(std::remove_if(removed_.begin(), removed_.end(), old), removed_.end());
  removed_pending_.erase(std::remove_if(removed_pending_.begin(), removed_pending_.end(), old),
                         removed_pending_.end());
}

void apply_delta_rows(sparse_table_rows& base, const sparse_table_rows& delta, uint32_t dim,
                      uint32_t slots, bool counts_steps) {
  auto check = [&](const sparse_table_rows& t, const char* which) {
    const std::size_t n = t.keys.size();
    auto sizes = [&](const char* what, std::size_t got, std::size_t want) {
      require(got == want, std::string("apply_delta_rows: the ") + which + "'s " + what + " holds "
                             + std::to_string(got) + " entries, " + std::to_string(want)
                             + " expected");
    };
    sizes("values", t.values.size(), n * dim);
    sizes("state", t.state.size(), n * slots * dim);
    sizes("touches", t.touches.size(), n);
    sizes("steps", t.steps.size(), counts_steps ? n : 0);
    sizes("clocks", t.clocks.size(), n);
  };
  check(base, "base");
  check(delta, "delta");
  const std::size_t state_floats = std::size_t(slots) * dim;
  sparse_table_rows out;
  auto size_rows = [&](std::size_t rows) {
    out.keys.resize(rows);
    out.values.resize(rows * dim);
    out.state.resize(rows * state_floats);
    out.touches.resize(rows);
    out.clocks.resize(rows);
    if (counts_steps) out.steps.resize(rows);
  };
  size_rows(base.keys.size() + delta.keys.size());  // the most it can hold
  std::size_t n = 0;  // rows in out so far
  // Rows [r, r + count) of `from`, copied at once: a delta's rows are few, so most of a fold is
  // runs of base rows between them, each one copy per array rather than one per row.
  auto take = [&](const sparse_table_rows& from, std::size_t r, std::size_t count) {
    std::copy_n(from.keys.begin() + r, count, out.keys.begin() + n);
    std::copy_n(from.values.begin() + r * dim, count * dim, out.values.begin() + n * dim);
    std::copy_n(from.state.begin() + r * state_floats, count * state_floats,
                out.state.begin() + n * state_floats);
    std::copy_n(from.touches.begin() + r, count, out.touches.begin() + n);
    std::copy_n(from.clocks.begin() + r, count, out.clocks.begin() + n);
    if (counts_steps) std::copy_n(from.steps.begin() + r, count, out.steps.begin() + n);
    n += count;
  };
  std::size_t b = 0, d = 0, gone = 0;
  const auto& removed = delta.removed_keys;
  while (b < base.keys.size() || d < delta.keys.size()) {
    const bool from_delta = b == base.keys.size()
                            || (d < delta.keys.size() && delta.keys[d] <= base.keys[b]);
    if (from_delta) {
      if (b < base.keys.size() && base.keys[b] == delta.keys[d]) ++b;  // replaced
      take(delta, d++, 1);
      continue;
    }
    const uint64_t key = base.keys[b];
    while (gone < removed.size() && removed[gone] < key) ++gone;
    if (gone < removed.size() && removed[gone] == key) {
      ++b;  // evicted since
      continue;
    }
    // base's rows up to the next key the delta names (a row or a tombstone)
    uint64_t next = std::numeric_limits<uint64_t>::max();
    bool bounded = false;
    if (d < delta.keys.size()) next = delta.keys[d], bounded = true;
    if (gone < removed.size() && (!bounded || removed[gone] < next))
      next = removed[gone], bounded = true;
    const auto end = bounded ? std::lower_bound(base.keys.begin() + b, base.keys.end(), next)
                             : base.keys.end();
    const auto count = static_cast<std::size_t>(end - (base.keys.begin() + b));
    take(base, b, count);
    b += count;
  }
  size_rows(n);
  out.sketch = delta.sketch;
  if (!delta.pending_changes_only) {  // whole
    out.pending_keys = delta.pending_keys;
    out.pending_counts = delta.pending_counts;
    out.pending_clocks = delta.pending_clocks;
    base = std::move(out);
    return;
  }
  auto check_pending = [&](const sparse_table_rows& t, const char* which) {
    const std::size_t n = t.pending_keys.size();
    require(t.pending_counts.size() == n
              && (t.pending_clocks.empty() || t.pending_clocks.size() == n),
            std::string("apply_delta_rows: the ") + which + "'s pending counts or clocks do not "
              "match its " + std::to_string(n) + " pending keys");
  };
  check_pending(base, "base");
  check_pending(delta, "delta");
  const bool clocks = !delta.pending_clocks.empty() || !base.pending_clocks.empty();
  require(!clocks || ((delta.pending_keys.empty() || !delta.pending_clocks.empty())
                      && (base.pending_keys.empty() || !base.pending_clocks.empty())),
          "apply_delta_rows: pending clocks in only one of the base and the delta");
  // Base's entries go for the keys the delta has as rows or tombstones of either kind: each of
  // those sorted, walked alongside.
  struct cursor {
    const std::vector<uint64_t>& keys;
    std::size_t at = 0;
    bool holds(uint64_t key) {
      while (at < keys.size() && keys[at] < key) ++at;
      return at < keys.size() && keys[at] == key;
    }
  };
  cursor rows{delta.keys}, removed_rows{delta.removed_keys}, dropped{delta.removed_pending};
  const std::size_t pending_most = base.pending_keys.size() + delta.pending_keys.size();
  out.pending_keys.reserve(pending_most);
  out.pending_counts.reserve(pending_most);
  if (clocks) out.pending_clocks.reserve(pending_most);
  auto take_pending = [&](const sparse_table_rows& from, std::size_t p) {
    out.pending_keys.push_back(from.pending_keys[p]);
    out.pending_counts.push_back(from.pending_counts[p]);
    if (clocks) out.pending_clocks.push_back(from.pending_clocks[p]);
  };
  std::size_t p = 0, q = 0;
  while (p < base.pending_keys.size() || q < delta.pending_keys.size()) {
    if (p == base.pending_keys.size()
        || (q < delta.pending_keys.size() && delta.pending_keys[q] <= base.pending_keys[p])) {
      if (p < base.pending_keys.size() && base.pending_keys[p] == delta.pending_keys[q]) ++p;
      take_pending(delta, q++);
      continue;
    }
    const uint64_t key = base.pending_keys[p];
    if (rows.holds(key) || removed_rows.holds(key) || dropped.holds(key)) {
      ++p;  // admitted, or dropped, since
      continue;
    }
    take_pending(base, p++);
  }
  base = std::move(out);
}

sparse_rows_in rows_in(const sparse_table_rows& rows) {
  auto in = [](const auto& v) {
    return array_in<typename std::decay_t<decltype(v)>::value_type>{v.data(), v.size()};
  };
  return {in(rows.keys),         in(rows.values),         in(rows.state),
          in(rows.touches),      in(rows.steps),          in(rows.clocks),
          in(rows.pending_keys), in(rows.pending_counts), in(rows.pending_clocks)};
}

void sparse_table::check_rows(const sparse_rows_in& in, const admission_sketch_state* sketch,
                              const char* who) const {
  const std::size_t n = in.keys.size;
  const uint32_t dim = cfg_.dim;
  const std::string at = std::string(who) + ": ";
  auto sizes = [&](const char* what, std::size_t got, std::size_t want) {
    require(got == want, at + what + " holds " + std::to_string(got) + " entries, "
                           + std::to_string(want) + " expected");
  };
  require(n <= max_rows, at + "more rows than one table can hold");
  sizes("values", in.values.size, n * dim);
  sizes("state", in.state.size, n * slots_ * dim);
  sizes("touches", in.touches.size, n);
  sizes("steps", in.steps.size, counts_steps_ ? n : 0);
  if (!in.clocks.empty()) sizes("clocks", in.clocks.size, n);
  sizes("pending_counts", in.pending_counts.size, in.pending_keys.size);
  if (!in.pending_clocks.empty())
    sizes("pending_clocks", in.pending_clocks.size, in.pending_keys.size);
  require(!sketch_ || in.pending_keys.empty(),
          at + "exact pending counts for a table whose counts are a sketch (admission_memory)");
  if (sketch) {
    require(sketch_ || sketch->depth == 0,
            at + "an admission sketch for a table that counts exactly (admission_memory 0)");
    if (sketch_) {
      require(sketch->depth > 0, at + "no admission sketch for a table with one "
                                      "(admission_memory "
                                   + std::to_string(cfg_.admission_memory) + ")");
      auto why = sketch_->mismatch(*sketch);
      require(why.empty(), at + why);
    }
  }
  for (std::size_t r = 1; r < n; ++r)
    require(in.keys[r - 1] < in.keys[r],
            at + "keys are not strictly ascending at row " + std::to_string(r));
  require(in.pending_keys.empty() || cfg_.admit_after > 1,
          at + "pending keys for a table without admission (admit_after <= 1)");
  for (std::size_t p = 0; p < in.pending_keys.size; ++p) {
    require(p == 0 || in.pending_keys[p - 1] < in.pending_keys[p],
            at + "pending keys are not strictly ascending at " + std::to_string(p));
    require(in.pending_counts[p] >= 1 && in.pending_counts[p] < cfg_.admit_after,
            at + "pending count " + std::to_string(in.pending_counts[p]) + " of key "
              + std::to_string(in.pending_keys[p]) + " is outside [1, "
              + std::to_string(cfg_.admit_after) + ")");
    require(!std::binary_search(in.keys.begin(), in.keys.end(), in.pending_keys[p]),
            at + "key " + std::to_string(in.pending_keys[p]) + " is both a row and pending");
  }
}

void sparse_table::take_rows(const sparse_table_rows& in, int64_t clock) {
  const auto rows = rows_in(in);
  // A sketch in `in` replaces this table's; rows without one leave it.
  check_rows(rows, in.sketch.depth > 0 ? &in.sketch : nullptr, "take_rows");
  take_checked(rows, clock, false);
  if (sketch_ && in.sketch.depth > 0) sketch_->restore(in.sketch);
}

void sparse_table::take_rows(const sparse_rows_in& in, int64_t clock, bool known_new) {
  check_rows(in, nullptr, "take_rows");
  take_checked(in, clock, known_new);
}

void sparse_table::take_checked(const sparse_rows_in& in, int64_t clock, bool known_new) {
  auto held = [&](uint64_t key) {
    return index_.find(key, key_of()) != row_index::npos || pending_.count(key) > 0;
  };
  if (!known_new) {
    for (auto key : in.keys)
      require(!held(key), "take_rows: key " + std::to_string(key) + " is held here already");
    for (auto key : in.pending_keys)
      require(!held(key),
              "take_rows: pending key " + std::to_string(key) + " is held here already");
  }
  const std::size_t n = in.keys.size;
  require(index_.size() + n <= max_rows, "take_rows: more rows than one table can hold");
  const uint32_t dim = cfg_.dim;
  const std::size_t state_floats = std::size_t(slots_) * dim;
  // Every allocation first (pages, steps, the index's growth), so that a throw leaves the
  // table as it was.
  const auto first = static_cast<uint32_t>(index_.size());
  if (n > 0) ensure_pages_to(first + static_cast<uint32_t>(n) - 1);
  reserve_rows(n);
  index_.reserve(first + n, key_of());
  pending_.reserve(pending_.size() + in.pending_keys.size);
  if (pending_clocked()) {
    pending_keys_.reserve(pending_keys_.size() + in.pending_keys.size);
    pending_clocks_.reserve(pending_clocks_.size() + in.pending_keys.size);
  }
  for (std::size_t r = 0; r < n; ++r) {
    const auto index = static_cast<uint32_t>(first + r);
    std::memcpy(row_start(index), &in.keys[r], sizeof(uint64_t));
    float* values = row(index);
    std::memcpy(values, in.values.data + r * dim, dim * sizeof(float));
    std::memcpy(values + dim, in.state.data + r * state_floats, state_floats * sizeof(float));
    set_row_clock(index, in.clocks.empty() ? clock32(clock) : in.clocks[r]);
    set_row_touches(index, in.touches[r]);
    if (counts_steps_) steps_.push_back(in.steps[r]);
  }
  index_.append(n, key_of());  // reserved: cannot throw now
  const bool clocked = pending_clocked();
  for (std::size_t p = 0; p < in.pending_keys.size; ++p) {
    const uint32_t last = in.pending_clocks.empty() ? clock32(clock) : in.pending_clocks[p];
    uint32_t where = last;  // without eviction the slot holds the entry's last clock
    if (clocked) {
      where = static_cast<uint32_t>(pending_keys_.size());
      pending_keys_.push_back(in.pending_keys[p]);
      pending_clocks_.push_back(last);
    }
    pending_.emplace(in.pending_keys[p], pending_ref{in.pending_counts[p], where});
  }
  peak_rows_ = std::max(peak_rows_, index_.size());
}

void sparse_table::import_rows(const sparse_table_rows& in, int64_t clock) {
  check_rows(rows_in(in), &in.sketch, "import_rows");
  const std::size_t n = in.keys.size();
  const uint32_t dim = cfg_.dim;
  // Built aside and swapped in, so a failed allocation leaves the table as it was.
  sparse_table fresh(cfg_, seed_, table_);
  fresh.pages_.reserve((n + rows_per_page_ - 1) / rows_per_page_);
  if (counts_steps_) fresh.steps_.assign(in.steps.begin(), in.steps.end());
  const std::size_t state_floats = std::size_t(slots_) * dim;
  for (std::size_t r = 0; r < n; ++r) {
    const auto index = static_cast<uint32_t>(r);
    fresh.ensure_page_for(index);
    std::memcpy(fresh.row_start(index), &in.keys[r], sizeof(uint64_t));
    float* values = fresh.row(index);
    std::memcpy(values, in.values.data() + r * dim, dim * sizeof(float));
    std::memcpy(values + dim, in.state.data() + r * state_floats, state_floats * sizeof(float));
    fresh.set_row_clock(index, in.clocks.empty() ? clock32(clock) : in.clocks[r]);
    fresh.set_row_touches(index, in.touches[r]);
  }
  fresh.index_.assign(n, fresh.key_of());
  fresh.pending_.reserve(in.pending_keys.size());
  const bool clocked = pending_clocked();
  if (clocked) {
    fresh.pending_keys_.assign(in.pending_keys.begin(), in.pending_keys.end());
    if (in.pending_clocks.empty())
      fresh.pending_clocks_.assign(in.pending_keys.size(), clock32(clock));
    else
      fresh.pending_clocks_.assign(in.pending_clocks.begin(), in.pending_clocks.end());
  }
  for (std::size_t p = 0; p < in.pending_keys.size(); ++p) {
    // without eviction the slot holds the entry's last clock instead of its place
    const uint32_t where = clocked                      ? static_cast<uint32_t>(p)
                           : in.pending_clocks.empty() ? clock32(clock)
                                                        : in.pending_clocks[p];
    fresh.pending_.emplace(in.pending_keys[p], pending_ref{in.pending_counts[p], where});
  }
  if (fresh.sketch_) fresh.sketch_->restore(in.sketch);
  std::swap(index_, fresh.index_);
  pages_.swap(fresh.pages_);
  steps_.swap(fresh.steps_);
  pending_.swap(fresh.pending_);
  pending_keys_.swap(fresh.pending_keys_);
  pending_clocks_.swap(fresh.pending_clocks_);
  sketch_.swap(fresh.sketch_);
  sweep_at_ = 0;
  pending_sweep_at_ = 0;
  ages_.clear();
  evict_age_ = std::numeric_limits<uint32_t>::max();
  peak_rows_ = std::max(peak_rows_, index_.size());
}

// --- copying ahead ------------------------------------------------------------------------------

void sparse_table::set_bit(std::vector<uint64_t>& bits, uint32_t index, bool on) {
  if (index / 64 >= bits.size()) {
    if (!on) return;
    bits.resize(index / 64 + 1, 0);
  }
  if (on) bits[index / 64] |= uint64_t{1} << (index % 64);
  else bits[index / 64] &= ~(uint64_t{1} << (index % 64));
}

void sparse_table::begin_copy(int64_t since) {
  copying_ = true;
  copy_since_ = since;
  copied_.assign((index_.size() + 63) / 64, 0);
  changed_.assign(copied_.size(), 0);
  copied_gone_.clear();
}

void sparse_table::end_copy() {
  copying_ = false;
  copied_ = {};
  changed_ = {};
  copied_gone_ = {};
}

std::vector<sparse_table::picked_rows> sparse_table::pick_copy(key_part part, const void* context,
                                                               std::size_t parts,
                                                               uint32_t& cursor,
                                                               std::size_t budget,
                                                               int64_t now) const {
  std::vector<picked_rows> out(parts);
  if (!copying_) {
    cursor = static_cast<uint32_t>(index_.size());
    return out;
  }
  const uint32_t at = clock32(now);
  const auto end = static_cast<uint32_t>(
    std::min<std::size_t>(index_.size(), std::size_t(cursor) + budget));
  for (; cursor < end; ++cursor) {
    if (copied(cursor) || stale(cursor, at)) continue;
    if (!copied_gone_.empty() && copied_gone_.count(row_key(cursor)) > 0) continue;  // copied once
    const auto p = part(row_key(cursor), context);
    if (p < 0 || static_cast<std::size_t>(p) >= parts) continue;
    out[static_cast<std::size_t>(p)].rows.emplace_back(row_key(cursor), cursor);
    set_bit(copied_, cursor, true);
  }
  for (auto& o : out)
    std::sort(o.rows.begin(), o.rows.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::vector<sparse_table::picked_rows> sparse_table::pick_after_copy(key_part part,
                                                                     const void* context,
                                                                     std::size_t parts,
                                                                     int64_t now) const {
  auto out = pick(part, context, parts, now, copying_);
  if (!copying_) return out;
  const uint32_t at = clock32(now);
  auto gone_to = [&](uint64_t key) {
    // A key removed and created again is a live row: its copy is right, or it is written over.
    const uint32_t index = index_.find(key, key_of());
    if (index != row_index::npos && !stale(index, at)) return;
    const auto p = part(key, context);
    if (p >= 0 && static_cast<std::size_t>(p) < parts)
      out[static_cast<std::size_t>(p)].gone.push_back(key);
  };
  for (auto key : copied_gone_) gone_to(key);
  if (cfg_.evict_after > 0)  // copied, stale since
    for (uint32_t index = 0; index < index_.size(); ++index)
      if (copied(index) && stale(index, at)) gone_to(row_key(index));
  for (auto& o : out) {
    std::sort(o.gone.begin(), o.gone.end());
    o.gone.erase(std::unique(o.gone.begin(), o.gone.end()), o.gone.end());
  }
  return out;
}

std::size_t sparse_table::remove_keys(const uint64_t* keys, std::size_t count) {
  std::size_t removed = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const uint32_t index = index_.find(keys[k], key_of());
    if (index == row_index::npos) continue;
    unlink_row(index);
    ++removed;
  }
  return removed;
}

void sparse_table::put_rows(const sparse_rows_in& in, int64_t clock) {
  check_rows(in, nullptr, "put_rows");
  require(in.pending_keys.empty(), "put_rows: pending counts are taken by take_rows");
  const std::size_t n = in.keys.size;
  const uint32_t dim = cfg_.dim;
  const std::size_t state_floats = std::size_t(slots_) * dim;
  std::vector<uint32_t> found(n);
  std::size_t fresh = 0;
  for (std::size_t r = 0; r < n; ++r) {
    found[r] = index_.find(in.keys[r], key_of());
    if (found[r] == row_index::npos) {
      require(pending_.count(in.keys[r]) == 0,
              "put_rows: key " + std::to_string(in.keys[r]) + " is pending here");
      ++fresh;
    }
  }
  require(index_.size() + fresh <= max_rows, "put_rows: more rows than one table can hold");
  // Every allocation first, so that a throw leaves the table as it was.
  const auto first = static_cast<uint32_t>(index_.size());
  if (fresh > 0) ensure_pages_to(first + static_cast<uint32_t>(fresh) - 1);
  reserve_rows(fresh);
  index_.reserve(first + fresh, key_of());
  uint32_t next = first;
  for (std::size_t r = 0; r < n; ++r) {
    const bool is_new = found[r] == row_index::npos;
    const uint32_t index = is_new ? next++ : found[r];
    if (is_new) std::memcpy(row_start(index), &in.keys[r], sizeof(uint64_t));
    float* values = row(index);
    std::memcpy(values, in.values.data + r * dim, dim * sizeof(float));
    std::memcpy(values + dim, in.state.data + r * state_floats, state_floats * sizeof(float));
    set_row_clock(index, in.clocks.empty() ? clock32(clock) : in.clocks[r]);
    set_row_touches(index, in.touches[r]);
    if (counts_steps_) {
      if (is_new) steps_.push_back(in.steps[r]);
      else steps_[index] = in.steps[r];
    }
  }
  index_.append(fresh, key_of());  // reserved: cannot throw now
  peak_rows_ = std::max(peak_rows_, index_.size());
}

void sparse_table::take_all(sparse_table& other) {
  require(other.stride_ == stride_ && other.counts_steps_ == counts_steps_,
          "take_all: a table of another dim or optimizer");
  const std::size_t n = other.index_.size();
  require(index_.size() + n <= max_rows, "take_all: more rows than one table can hold");
  // Every allocation first, so that a throw leaves the table as it was; then each row (its key,
  // clock and touches with it) copied as it lies, in no particular order.
  const auto first = static_cast<uint32_t>(index_.size());
  if (n > 0) ensure_pages_to(first + static_cast<uint32_t>(n) - 1);
  reserve_rows(n);
  index_.reserve(first + n, key_of());
  for (uint32_t r = 0; r < n; ++r) {
    std::memcpy(row_start(first + r), other.row_start(r), std::size_t(stride_) * sizeof(float));
    if (counts_steps_) steps_.push_back(other.steps_[r]);
  }
  index_.append(n, key_of());  // reserved: cannot throw now
  peak_rows_ = std::max(peak_rows_, index_.size());
  other = sparse_table(other.cfg_, other.seed_, other.table_);
}

} // namespace actorps
