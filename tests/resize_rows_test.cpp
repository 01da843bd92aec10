// A live resize's rows: each old shard picks the rows of the buckets it gives away, writes them
// per new shard straight from its tables, and the new owner takes them read in place.
#include "actors/protocol/checkpoint_codec.hpp"
#include "actors/protocol/placement_change.hpp"
#include "actors/roles/shard_tables.hpp"
#include "kernels/sparse/row_optimizer.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

namespace actorps {
namespace {

constexpr uint32_t dim = 2;

/// 2 shards, one table of rows of 2 floats with Adam (state and steps), exact pending counts.
train_spec two_shard_spec() {
  train_spec spec;
  spec.model.name = "test";
  spec.model.tensors = {{"b", {3}, tensor_init::zeros, 0}};
  spec.shards = 2;
  spec.workers = 2;
  spec.mode = consistency::sync;
  sparse_table_spec table;
  table.name = "emb";
  table.config.dim = dim;
  table.config.optimizer.kind = row_optimizer_kind::adam;
  table.config.admit_after = 3;
  spec.model.sparse_tables.push_back(table);
  place_buckets(spec);
  return spec;
}

/// Shard s's table (-1: every shard's): keys 1..2000 it owns, a row where the key is even
/// (values recognisable from the key), pending (count 1 or 2) where it is odd.
sparse_table_rows rows_of(const train_spec& spec, int s) {
  const auto slots = row_state_slots(row_optimizer_kind::adam);
  sparse_table_rows t;
  for (uint64_t key = 1; key <= 2000; ++key) {
    if (s >= 0 && spec.shard_of_key(key) != s) continue;
    if (key % 2 == 1) {
      t.pending_keys.push_back(key);
      t.pending_counts.push_back(uint32_t(key % 4 == 1 ? 1 : 2));
      continue;
    }
    t.keys.push_back(key);
    for (uint32_t i = 0; i < dim; ++i) t.values.push_back(float(key) + 0.25f * float(i));
    for (uint32_t i = 0; i < slots * dim; ++i) t.state.push_back(-float(key) - float(i));
    t.touches.push_back(uint32_t(key % 7 + 3));
    t.steps.push_back(uint32_t(key % 5 + 1));
    t.clocks.push_back(uint32_t(key % 11));
  }
  return t;
}

/// The rows of `keys` picked out of `whole` (ascending both).
sparse_table_rows only(const sparse_table_rows& whole, bool (*keep)(uint64_t, const void*),
                       const void* context) {
  sparse_table_rows out;
  const auto slots = row_state_slots(row_optimizer_kind::adam);
  for (std::size_t r = 0; r < whole.keys.size(); ++r) {
    if (!keep(whole.keys[r], context)) continue;
    out.keys.push_back(whole.keys[r]);
    out.values.insert(out.values.end(), whole.values.begin() + std::ptrdiff_t(r * dim),
                      whole.values.begin() + std::ptrdiff_t((r + 1) * dim));
    out.state.insert(out.state.end(), whole.state.begin() + std::ptrdiff_t(r * slots * dim),
                     whole.state.begin() + std::ptrdiff_t((r + 1) * slots * dim));
    out.touches.push_back(whole.touches[r]);
    out.steps.push_back(whole.steps[r]);
    out.clocks.push_back(whole.clocks[r]);
  }
  for (std::size_t p = 0; p < whole.pending_keys.size(); ++p)
    if (keep(whole.pending_keys[p], context)) {
      out.pending_keys.push_back(whole.pending_keys[p]);
      out.pending_counts.push_back(whole.pending_counts[p]);
    }
  return out;
}

void check_same(const sparse_table_rows& a, const sparse_table_rows& b) {
  CHECK(a.keys == b.keys);
  CHECK(a.values.size() == b.values.size());
  CHECK(std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0);
  CHECK(a.state.size() == b.state.size());
  CHECK(std::memcmp(a.state.data(), b.state.data(), a.state.size() * sizeof(float)) == 0);
  CHECK(a.touches == b.touches);
  CHECK(a.steps == b.steps);
  CHECK(a.clocks == b.clocks);
  CHECK(a.pending_keys == b.pending_keys);
  CHECK(a.pending_counts == b.pending_counts);
}

struct owner_is {
  const train_spec* spec;
  int shard;
  static bool test(uint64_t key, const void* self) {
    const auto& o = *static_cast<const owner_is*>(self);
    return o.spec->shard_of_key(key) == o.shard;
  }
};

} // namespace

TEST_CASE("a resize's rows: picked per new shard, written from the table, taken in place") {
  const auto before = two_shard_spec();
  const auto after = resized_spec(before, 3);
  std::vector<shard_tables> old;
  std::vector<sparse_table_rows> whole;
  for (int s = 0; s < 2; ++s) {
    whole.push_back(rows_of(before, s));
    REQUIRE(whole.back().keys.size() > 300);
    old.emplace_back(before, s);
    REQUIRE(!old.back().import_rows({whole.back()}, 10));
  }
  // Each old shard's part for each new shard holds exactly the keys it owned that go there.
  std::vector<std::vector<wire_buffer>> parts(3);  // by new shard
  for (int o = 0; o < 2; ++o) {
    const auto picked = old[o].pick_moving(after.bucket_shards);
    REQUIRE(picked.size() == 3);
    CHECK(picked[o].front().rows.empty());  // nothing to itself
    for (int s = 0; s < 3; ++s) {
      if (s == o) continue;
      CAPTURE(o);
      CAPTURE(s);
      auto buf = encode_shard_rows(before, o, 10, old[o].tables(), picked[s]);
      auto view = read_shard_rows(buf);
      REQUIRE_MESSAGE(view, to_string(view.error()));
      CHECK(view->shard == o);
      CHECK(view->clock == 10);
      CHECK(view->spec.bucket_shards == before.bucket_shards);
      REQUIRE(view->tables.size() == 1);
      const owner_is goes{&after, s};
      const auto want = only(whole[o], &owner_is::test, &goes);
      const auto& t = view->tables.front();
      sparse_table_rows got;
      got.keys.assign(t.keys.begin(), t.keys.end());
      got.values.assign(t.values.begin(), t.values.end());
      got.state.assign(t.state.begin(), t.state.end());
      got.touches.assign(t.touches.begin(), t.touches.end());
      got.steps.assign(t.steps.begin(), t.steps.end());
      got.clocks.assign(t.clocks.begin(), t.clocks.end());
      got.pending_keys.assign(t.pending_keys.begin(), t.pending_keys.end());
      got.pending_counts.assign(t.pending_counts.begin(), t.pending_counts.end());
      check_same(got, want);
      CHECK(want.keys.empty() == (s != 2));  // growing: only the new shard gains buckets
      if (!want.keys.empty()) parts[s].push_back(std::move(buf));
    }
  }
  REQUIRE(parts[2].size() == 2);
  auto read = [](const std::vector<wire_buffer>& bufs) {
    std::vector<shard_rows_view> views;
    for (const auto& b : bufs) views.push_back(*read_shard_rows(b));
    return views;
  };
  const std::vector<sparse_table_rows> no_rows(1);
  // Refused, the table unchanged: a part given twice, rows a shard claims that were not its
  // own, rows a shard takes that another owns, a delta or dense blocks read as rows.
  {
    shard_tables twice(after, 2);
    auto views = read(parts[2]);
    views.push_back(views.front());
    auto err = twice.move_to(after, no_rows, views, 10);
    REQUIRE(err);
    CHECK(to_string(err).find("come twice") != std::string::npos);
    auto mislabelled = read(parts[2]);
    mislabelled.front().shard = 1 - mislabelled.front().shard;
    err = twice.move_to(after, no_rows, mislabelled, 10);
    REQUIRE(err);
    CHECK(to_string(err).find("is not its to give or this shard's to take") != std::string::npos);
    shard_tables wrong_owner(after, 1);
    err = wrong_owner.move_to(after, no_rows, read({parts[2].front()}), 10);
    REQUIRE(err);
    CHECK(to_string(err).find("is not its to give or this shard's to take") != std::string::npos);
    CHECK(twice.rows().front() == 0);
    CHECK(wrong_owner.rows().front() == 0);
    shard_checkpoint_view dense;
    dense.spec = before;
    dense.clock = 10;
    const float values[3] = {1, 2, 3};
    dense.blocks.push_back({0, values, 3});
    dense.state.push_back({0, values, 0});
    dense.sparse.resize(1);
    auto refused = read_shard_rows(encode_shard_checkpoint(before, dense));
    REQUIRE(!refused);
    CHECK(to_string(refused.error()).find("dense blocks") != std::string::npos);
  }
  // The new shard takes both parts; the old ones drop what leaves: together, every row once.
  shard_tables fresh(after, 2);
  REQUIRE(!fresh.move_to(after, no_rows, read(parts[2]), 10));
  for (int s = 0; s < 2; ++s) REQUIRE(!old[s].move_to(after, no_rows, {}, 10));
  const auto all = rows_of(before, -1);
  for (int s = 0; s < 3; ++s) {
    CAPTURE(s);
    const owner_is mine{&after, s};
    auto& tables = s < 2 ? old[s] : fresh;
    check_same(tables.export_rows().front(), only(all, &owner_is::test, &mine));
  }
}

namespace {

/// The push of every key k <= top that shard `s` owns with k % every == 0: gradient -k/1000.
struct push_of {
  std::vector<uint64_t> keys;
  std::vector<float> grads;
  push_of(const train_spec& spec, int s, uint64_t top, uint64_t every) {
    for (uint64_t key = 1; key <= top; ++key)
      if (spec.shard_of_key(key) == s && key % every == 0) {
        keys.push_back(key);
        for (uint32_t i = 0; i < dim; ++i) grads.push_back(-float(key) / 1000.0f);
      }
  }
  std::vector<sparse_rows_view> parts() const {
    return {{0, keys.data(), keys.size(), grads.data(), grads.size()}};
  }
};

/// Copying ahead to `to` shards from 2 while the tables change (pushes that update copied rows,
/// admit keys, start stale rows over or send them back to pending; a sweep that evicts copied
/// rows), then the hand-over of what changed since: every new shard ends byte-equal to the same
/// change made without a copy.
void copy_then_move(int to) {
  CAPTURE(to);
  auto before = two_shard_spec();
  before.model.sparse_tables[0].config.evict_after = 12;
  const auto after = resized_spec(before, to);
  constexpr int64_t resize_clock = 26;
  std::vector<shard_tables> copying, plain;  // the same rows and changes, with and without
  for (int s = 0; s < 2; ++s) {
    for (auto* side : {&copying, &plain}) {
      side->emplace_back(before, s);
      auto rows = rows_of(before, s);
      for (auto& c : rows.clocks) c += 10;  // last pushed at clocks 10 to 20
      REQUIRE(!side->back().import_rows({rows}, 20));
      side->back().set_clock(22);  // none stale yet: at 23 those of clock 10 are
    }
    copying[s].begin_copy(after.bucket_shards, resize_clock);
  }
  const auto shards = static_cast<std::size_t>(std::max(to, 2));
  std::vector<shard_tables> arriving;
  for (std::size_t s = 0; s < shards; ++s) arriving.emplace_back(before, int32_t(s));
  std::vector<wire_buffer> copies;
  std::size_t copied_rows = 0;
  auto change = [&](int64_t clock, uint64_t every) {
    for (int s = 0; s < 2; ++s)
      for (auto* side : {&copying, &plain}) {
        auto& t = (*side)[static_cast<std::size_t>(s)];
        t.set_clock(clock);
        t.sweep(1u << 20);
        const push_of push(before, s, 2400, every);
        t.apply(push.parts(), 1.0f, clock);
      }
  };
  for (int step = 0;; ++step) {
    bool all_done = true;
    for (int o = 0; o < 2; ++o) {
      bool done = false;
      const auto parts = copying[o].copy_step(64, done);
      all_done = all_done && done;
      for (std::size_t s = 0; s < parts.size(); ++s) {
        if (parts[s].front().rows.empty()) continue;
        copied_rows += parts[s].front().rows.size();
        copies.push_back(encode_shard_rows(before, o, resize_clock, copying[o].tables(), parts[s]));
        auto view = read_shard_rows(copies.back());
        REQUIRE(view);
        REQUIRE(!arriving[s].stage(*view));
      }
    }
    if (step == 1) change(23, 3);  // rows last pushed before clock 11 go stale, then swept
    if (step == 3) change(24, 5);
    if (all_done) break;
  }
  REQUIRE(copied_rows > 100);
  change(25, 7);  // after the copy
  std::vector<std::vector<wire_buffer>> deltas(shards), wholes(shards);
  std::size_t changed = 0, gone = 0, whole_rows = 0;
  for (int o = 0; o < 2; ++o) {
    copying[o].set_clock(resize_clock);
    plain[o].set_clock(resize_clock);
    const auto since = copying[o].copied_since(after.bucket_shards, resize_clock);
    CHECK(since == 22);
    const auto delta = copying[o].pick_moving(after.bucket_shards, resize_clock);
    const auto whole = plain[o].pick_moving(after.bucket_shards);
    for (std::size_t s = 0; s < delta.size(); ++s) {
      if (static_cast<int>(s) == o) continue;
      changed += delta[s].front().rows.size();
      gone += delta[s].front().gone.size();
      whole_rows += whole[s].front().rows.size();
      deltas[s].push_back(
        encode_shard_rows(before, o, resize_clock, copying[o].tables(), delta[s], since));
      wholes[s].push_back(encode_shard_rows(before, o, resize_clock, plain[o].tables(), whole[s]));
    }
  }
  // The changes reached copied rows (written again) and removed some (tombstones), and most
  // rows did not travel twice.
  CHECK(changed > 0);
  CHECK(gone > 0);
  CHECK(changed < whole_rows);
  auto read = [](const std::vector<wire_buffer>& bufs) {
    std::vector<shard_rows_view> views;
    for (const auto& b : bufs) views.push_back(*read_shard_rows(b));
    return views;
  };
  const std::vector<sparse_table_rows> no_rows(1);
  for (std::size_t s = 0; s < static_cast<std::size_t>(to); ++s) {
    CAPTURE(s);
    shard_tables fresh_a(after, int32_t(s)), fresh_b(after, int32_t(s));
    auto& with = s < 2 ? copying[s] : fresh_a;
    auto& without = s < 2 ? plain[s] : fresh_b;
    with.set_clock(resize_clock);
    without.set_clock(resize_clock);
    REQUIRE(!with.move_to(after, no_rows, read(deltas[s]), resize_clock, &arriving[s]));
    REQUIRE(!without.move_to(after, no_rows, read(wholes[s]), resize_clock));
    check_same(with.export_rows().front(), without.export_rows().front());
    CHECK(with.rows() == without.rows());
  }
}

} // namespace

TEST_CASE("a resize's rows copied ahead while the tables change, then only what changed") {
  copy_then_move(3);  // to a new shard: the copies become its table
  copy_then_move(1);  // to a shard that stays: the copies join its own rows
}

} // namespace actorps
