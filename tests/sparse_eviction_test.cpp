// sparse_table eviction: a row not pushed for evict_after clocks reads and restarts like a key
// never seen (initial values, fresh optimizer state; through admission again), whether or not
// the sweep has removed it yet; the sweep frees rows within its budget; each row's last clock
// travels through export and import; max_rows bounds the rows by the oldest.
#include "kernels/sparse/sparse_table.hpp"
#include "actors/ps/splitmix64.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace actorps {
namespace {

sparse_table_config evicting_config(uint32_t evict_after, row_optimizer_kind kind,
                                    uint32_t admit_after = 0) {
  sparse_table_config cfg;
  cfg.dim = 3;
  cfg.init = row_init::uniform;
  cfg.scale = 0.05f;
  cfg.optimizer.kind = kind;
  cfg.optimizer.learning_rate = 0.1f;
  cfg.admit_after = admit_after;
  cfg.evict_after = evict_after;
  return cfg;
}

std::vector<float> read_key(const sparse_table& table, uint64_t key, int64_t now) {
  std::vector<float> out(table.config().dim);
  table.read(&key, 1, out.data(), now);
  return out;
}

void push_key(sparse_table& table, uint64_t key, float grad, int64_t clock) {
  std::vector<float> g(table.config().dim, grad);
  table.apply(&key, 1, g.data(), 1.0f, clock);
}

/// The exported row of `key`: values, state, touches, step (Adam), clock; or none.
struct saved_row {
  std::vector<float> values, state;
  uint32_t touches = 0, step = 0, clock = 0;
  bool found = false;
};

saved_row row_of(const sparse_table& table, uint64_t key, int64_t now) {
  auto all = table.export_rows(now);
  saved_row r;
  auto at = std::lower_bound(all.keys.begin(), all.keys.end(), key) - all.keys.begin();
  if (at == static_cast<long>(all.keys.size()) || all.keys[at] != key) return r;
  const auto dim = table.config().dim;
  const auto state = all.state.size() / all.keys.size();
  r.found = true;
  r.values.assign(all.values.begin() + at * dim, all.values.begin() + (at + 1) * dim);
  r.state.assign(all.state.begin() + at * state, all.state.begin() + (at + 1) * state);
  r.touches = all.touches[at];
  r.step = all.steps.empty() ? 0 : all.steps[at];
  r.clock = all.clocks[at];
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

TEST_CASE("sparse eviction: a row not pushed for evict_after clocks reads and restarts as new") {
  for (auto kind : {row_optimizer_kind::adagrad, row_optimizer_kind::adam}) {
    CAPTURE(static_cast<int>(kind));
    sparse_table table(evicting_config(2, kind), 7, 0);
    sparse_table fresh(evicting_config(2, kind), 7, 0);  // the same key, never seen before
    const uint64_t key = 41, other = 42;
    const auto initial = read_key(fresh, key, 0);
    push_key(table, key, 0.5f, 0);
    push_key(table, key, 0.25f, 1);
    for (int64_t c = 0; c <= 4; ++c) push_key(table, other, 0.1f, c);
    // last pushed at clock 1: still there at clock 3 (two clocks without it), gone at 4
    CHECK(!same_bits(read_key(table, key, 3), initial));
    CHECK(row_of(table, key, 3).found);
    CHECK(same_bits(read_key(table, key, 4), initial));
    CHECK(!row_of(table, key, 4).found);  // a checkpoint at clock 4 holds no row for it
    CHECK(row_of(table, other, 4).found);
    // pushed again at clock 5: exactly a new key's row after one push (values, optimizer state,
    // touch count, Adam's step), last pushed at 5
    push_key(table, key, -0.75f, 5);
    push_key(fresh, key, -0.75f, 5);
    const auto got = row_of(table, key, 5), want = row_of(fresh, key, 5);
    REQUIRE(got.found);
    REQUIRE(want.found);
    CHECK(same_bits(got.values, want.values));
    CHECK(same_bits(got.state, want.state));
    CHECK(got.touches == 1);
    CHECK(got.step == want.step);
    CHECK(got.clock == 5);
    CHECK(table.evicted() == 1);
    CHECK(table.rows() == 2);
  }
}

TEST_CASE("sparse eviction: with admission an evicted key is counted anew before its row returns") {
  sparse_table table(evicting_config(1, row_optimizer_kind::adagrad, 2), 3, 0);
  sparse_table fresh(evicting_config(1, row_optimizer_kind::adagrad, 2), 3, 0);
  const uint64_t key = 9;
  push_key(table, key, 0.5f, 0);
  push_key(table, key, 0.5f, 1);  // admitted: a row
  REQUIRE(table.rows() == 1);
  CHECK(read_key(table, key, 2) != std::vector<float>(3, 0.0f));
  CHECK(read_key(table, key, 3) == std::vector<float>(3, 0.0f));  // gone: reads as zeros
  push_key(table, key, 0.3f, 3);  // counted, not admitted: no row, its gradient dropped
  CHECK(table.rows() == 0);
  CHECK(table.pending() == 1);
  CHECK(table.evicted() == 1);
  push_key(table, key, 0.2f, 4);  // admitted again, as a key never seen would be
  push_key(fresh, key, 0.3f, 3);
  push_key(fresh, key, 0.2f, 4);
  const auto got = row_of(table, key, 4), want = row_of(fresh, key, 4);
  REQUIRE(got.found);
  CHECK(same_bits(got.values, want.values));
  CHECK(same_bits(got.state, want.state));
  CHECK(got.touches == want.touches);
}

TEST_CASE("sparse eviction: the sweep frees stale rows within its budget and keeps the rest") {
  constexpr std::size_t n = 10000;
  sparse_table_config cfg = evicting_config(3, row_optimizer_kind::adagrad);
  cfg.dim = 16;
  sparse_table table(cfg, 1, 0);
  std::vector<uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = splitmix64_mix(i + 1);
  std::vector<float> grads(n * cfg.dim, 0.125f);
  table.apply(keys.data(), n, grads.data(), 1.0f, 0);
  // every other key pushed again at clock 3: the rest are stale at 4 (not pushed for 4 clocks)
  std::vector<uint64_t> kept;
  for (std::size_t i = 0; i < n; i += 2) kept.push_back(keys[i]);
  table.apply(kept.data(), kept.size(), grads.data(), 1.0f, 3);
  REQUIRE(table.evicted() == 0);
  std::vector<float> before(n * cfg.dim), after(n * cfg.dim);
  table.read(keys.data(), n, before.data(), 4);
  const auto bytes_before = table.memory_bytes();
  CHECK(table.sweep(3, n).evicted == 0);  // nothing is stale at clock 3
  std::size_t calls = 0, evicted = 0;
  for (bool done = false; !done; ++calls) {
    auto step = table.sweep(4, 1000);
    CHECK(step.examined <= 1000);
    evicted += step.evicted;
    done = step.pass_done;
  }
  CHECK(evicted == n / 2);
  CHECK(calls >= n / 1000);
  CHECK(table.rows() == n / 2);
  CHECK(table.evicted() == n / 2);
  CHECK(table.peak_rows() == n);
  CHECK(table.memory_bytes() < bytes_before);  // pages no longer needed went back
  table.read(keys.data(), n, after.data(), 4);  // the same, row by row, as before the sweep
  CHECK(same_bits(before, after));
  // the rows moved into the holes update as they would have where they were
  table.apply(kept.data(), kept.size(), grads.data(), 1.0f, 5);
  CHECK(table.rows() == n / 2);
}

TEST_CASE("sparse eviction: each row's last clock survives export and import") {
  sparse_table table(evicting_config(2, row_optimizer_kind::adam), 5, 0);
  for (uint64_t k = 1; k <= 6; ++k) push_key(table, k, 0.1f * float(k), int64_t(k));
  push_key(table, 2, 0.3f, 4);
  auto saved = table.export_rows(6);  // keys 1, 2 (last at 4, 6 - 4 = 2: kept), 3: stale ones
  CHECK(saved.keys == std::vector<uint64_t>{2, 4, 5, 6});
  CHECK(saved.clocks == std::vector<uint32_t>{4, 4, 5, 6});
  sparse_table restored(evicting_config(2, row_optimizer_kind::adam), 5, 0);
  restored.import_rows(saved, 6);
  // at clock 7 both drop keys 2 and 4 alike, keep 5 and 6
  for (uint64_t k = 1; k <= 6; ++k) {
    CAPTURE(k);
    CHECK(same_bits(read_key(restored, k, 7), read_key(table, k, 7)));
  }
  CHECK(restored.export_rows(7).keys == std::vector<uint64_t>{5, 6});
  // a checkpoint without clocks (written before rows had them): every row as of its clock
  saved.clocks.clear();
  sparse_table old(evicting_config(2, row_optimizer_kind::adam), 5, 0);
  old.import_rows(saved, 6);
  CHECK(old.export_rows(8).keys == std::vector<uint64_t>{2, 4, 5, 6});
  CHECK(old.export_rows(9).keys.empty());
}

TEST_CASE("sparse eviction: max_rows evicts the least recently pushed rows beyond it") {
  sparse_table_config cfg = evicting_config(0, row_optimizer_kind::sgd);
  cfg.max_rows = 100;
  sparse_table table(cfg, 1, 0);
  std::vector<float> grads(50 * cfg.dim, 0.1f);
  // 50 new keys a clock for 8 clocks: 400 rows, the oldest pushed at clock 0
  for (int64_t c = 0; c < 8; ++c) {
    std::vector<uint64_t> keys;
    for (uint64_t i = 0; i < 50; ++i) keys.push_back(uint64_t(c) * 1000 + i + 1);
    table.apply(keys.data(), keys.size(), grads.data(), 1.0f, c);
  }
  REQUIRE(table.rows() == 400);
  // the first pass learns the ages, the second evicts the oldest
  while (!table.sweep(8, 64).pass_done) {}
  while (!table.sweep(8, 64).pass_done) {}
  CHECK(table.rows() == 100);
  auto left = table.export_rows(8);
  CHECK(left.keys.front() > 6000);  // the two newest clocks' keys
  CHECK(table.evicted() == 300);
}

} // namespace actorps
