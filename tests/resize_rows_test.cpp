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
    shard_checkpoint_view delta;
    delta.spec = before;
    delta.clock = 10;
    delta.delta_since = 5;
    delta.sparse.resize(1);
    auto refused = read_shard_rows(encode_shard_checkpoint(before, delta));
    REQUIRE(!refused);
    CHECK(to_string(refused.error()).find("a delta, or dense blocks") != std::string::npos);
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

} // namespace actorps
