// row_index: key → dense row number, checked against std::unordered_map on random and
// adversarial keys, through growth and erase-heavy churn (tombstones must not lengthen probes),
// and the sparse table's bytes per row beyond its floats across whole growth cycles.
#include "kernels/sparse/row_index.hpp"
#include "kernels/sparse/sparse_table.hpp"
#include "actors/ps/splitmix64.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace actorps {
namespace {

/// A row_index with its rows' keys by row, and std::unordered_map as the reference.
struct checked_index {
  row_index index;
  std::vector<uint64_t> keys;  // by row, as the sparse table keeps them in its rows
  std::unordered_map<uint64_t, uint32_t> reference;

  auto key_of() const {
    return [this](uint32_t row) { return keys.at(row); };
  }

  void insert(uint64_t key) {
    const auto [row, created] = index.insert(key, key_of());
    const auto known = reference.find(key);
    REQUIRE(created == (known == reference.end()));
    if (!created) {
      REQUIRE(row == known->second);
      return;
    }
    REQUIRE(row == keys.size());
    keys.push_back(key);
    reference.emplace(key, row);
  }

  void erase(uint64_t key) {
    const auto known = reference.find(key);
    const uint32_t row = index.find(key, key_of());
    REQUIRE(index.erase(key, key_of()) == (known != reference.end()));
    if (known == reference.end()) return;
    REQUIRE(row == known->second);
    // the last row moves into the hole, as the table moves it
    const uint64_t last = keys.back();
    keys[row] = last;
    keys.pop_back();
    reference.erase(known);
    if (last != key) reference[last] = row;
  }

  /// Every key finds its row, a few absent keys find none, sizes agree.
  void check(uint64_t absent_seed) const {
    REQUIRE(index.size() == reference.size());
    REQUIRE(index.size() == keys.size());
    for (const auto& [key, row] : reference) {
      REQUIRE(index.find(key, key_of()) == row);
      REQUIRE(keys[row] == key);
    }
    splitmix64 rng(absent_seed);
    for (int i = 0; i < 200; ++i) {
      const uint64_t key = rng.next();
      if (reference.count(key) == 0) REQUIRE(index.find(key, key_of()) == row_index::npos);
    }
    // the load stays within its bounds whatever happened
    REQUIRE(index.size() + index.tombstones() <=
            index.capacity() * row_index::max_load_num / row_index::max_load_den);
  }

  double mean_probe(const std::vector<uint64_t>& probe_keys) const {
    std::size_t slots = 0;
    for (uint64_t key : probe_keys) slots += index.probe_length(key, key_of());
    return double(slots) / double(probe_keys.size());
  }
};

TEST_CASE("row index inserts, finds and erases like std::unordered_map") {
  checked_index t;
  t.check(1);
  CHECK(t.index.find(0, t.key_of()) == row_index::npos);
  CHECK_FALSE(t.index.erase(0, t.key_of()));
  // the extremes of the key range, a repeat, then random keys and erases mixed
  t.insert(0);
  t.insert(UINT64_MAX);
  t.insert(0);
  t.insert(UINT64_MAX - 1);
  t.check(2);
  splitmix64 rng(7);
  std::vector<uint64_t> held = {0, UINT64_MAX, UINT64_MAX - 1};
  for (int step = 0; step < 60000; ++step) {
    const uint64_t pick = rng.next();
    if (pick % 3 == 0 && !held.empty()) {  // erase a held key (or, at times, an absent one)
      const std::size_t at = pick / 3 % held.size();
      t.erase(held[at]);
      held[at] = held.back();
      held.pop_back();
      if (pick % 7 == 0) t.erase(rng.next());
    } else {
      const uint64_t key = rng.next();
      t.insert(key);
      held.push_back(key);
      if (pick % 5 == 0) t.insert(held[pick / 5 % held.size()]);  // a repeat: found, not added
    }
    if (step % 10000 == 0) t.check(step);
  }
  t.check(3);
  CHECK(t.index.size() > 15000);
  // erasing everything leaves an empty index that still works
  for (uint64_t key : held) t.erase(key);
  t.check(4);
  CHECK(t.index.size() == 0);
  t.insert(42);
  t.check(5);
}

TEST_CASE("row index spreads keys that are equal modulo a table size or share low bits") {
  // Keys a weak hash would pile into few home slots: multiples of 2^32, of 2^20 and of a
  // capacity the index takes (whose remainders are all equal), and keys differing only in
  // their top bits.
  constexpr uint64_t count = 50000;
  checked_index sized;  // the capacity `count` rows end up with
  for (uint64_t i = 0; i < count; ++i) sized.insert(i);
  const uint64_t capacity = sized.index.capacity();
  for (int family = 0; family < 4; ++family) {
    CAPTURE(family);
    checked_index t;
    std::vector<uint64_t> keys;
    for (uint64_t i = 0; i < count; ++i) {
      switch (family) {
        case 0: keys.push_back(i << 32); break;
        case 1: keys.push_back(i << 20); break;
        case 2: keys.push_back(i * capacity + 5); break;
        default: keys.push_back((i << 48) | 0x1234); break;
      }
    }
    for (uint64_t key : keys) t.insert(key);
    t.check(family);
    // A random table at load ≤ 0.875 with linear probing: about (1 + 1/(1 − load))/2 ≤ 4.5
    // slots a present key, and the longest run short.
    const double mean = t.mean_probe(keys);
    std::size_t longest = 0;
    for (uint64_t key : keys) longest = std::max(longest, t.index.probe_length(key, t.key_of()));
    MESSAGE("family " << family << ": mean probe " << mean << ", longest " << longest);
    CHECK(mean < 5);
    CHECK(longest < 200);
  }
}

TEST_CASE("row index grows by about 1.6 and keeps its load between 0.54 and 0.875") {
  checked_index t;
  splitmix64 rng(11);
  std::size_t growths = 0, capacity = 0;
  double least = 1, most = 0;
  for (int i = 0; i < 200000; ++i) {
    t.insert(rng.next());
    if (t.index.capacity() != capacity) {
      if (capacity >= 1000) {  // below, rounding to whole slots moves the factor
        const double factor = double(t.index.capacity()) / double(capacity);
        CHECK(factor == doctest::Approx(1.6).epsilon(0.01));
      }
      if (capacity > 0) ++growths;
      capacity = t.index.capacity();
    }
    if (t.index.size() < 1000) continue;
    const double load = double(t.index.size()) / double(t.index.capacity());
    least = std::min(least, load);
    most = std::max(most, load);
  }
  t.check(12);
  MESSAGE(growths << " growths, load " << least << " to " << most);
  CHECK(growths >= 15);
  CHECK(least >= 0.54);
  CHECK(most <= 0.875);
  CHECK(t.index.memory_bytes() == t.index.capacity() * 4);
  // reserve makes room for all at once, then inserts up to it do not rehash
  t.index.reserve(t.index.size() + 100000, t.key_of());
  capacity = t.index.capacity();
  for (int i = 0; i < 100000; ++i) t.insert(rng.next());
  CHECK(t.index.capacity() == capacity);
  t.check(13);
  // rows reserved in bulk (a resize's rows taken) are sized as a rebuild, at the cycle's lowest
  // load: the rows created next do not rehash them all at once
  checked_index bulk;
  bulk.index.reserve(100000, bulk.key_of());
  const auto sized = bulk.index.capacity();
  CHECK(100000.0 / double(sized) == doctest::Approx(0.875 / 1.6).epsilon(0.01));
  for (int i = 0; i < 150000; ++i) bulk.insert(rng.next());
  CHECK(bulk.index.capacity() == sized);
  bulk.check(14);
}

TEST_CASE("row index erase-heavy churn keeps probes short and the index small") {
  // 20 000 rows held while 1 M are erased and as many inserted: tombstones pile up between
  // rehashes but never beyond the load bound, so probes stay those of a table at load 0.875.
  checked_index t;
  splitmix64 rng(21);
  std::vector<uint64_t> held;
  for (int i = 0; i < 20000; ++i) {
    held.push_back(rng.next());
    t.insert(held.back());
  }
  const std::size_t capacity_before = t.index.capacity();
  std::size_t most_tombstones = 0, most_capacity = 0;
  for (int step = 0; step < 1000000; ++step) {
    const std::size_t at = rng.next() % held.size();
    t.erase(held[at]);
    held[at] = rng.next();
    t.insert(held[at]);
    most_tombstones = std::max(most_tombstones, t.index.tombstones());
    most_capacity = std::max(most_capacity, t.index.capacity());
  }
  t.check(22);
  std::vector<uint64_t> absent;
  for (int i = 0; i < 20000; ++i) absent.push_back(rng.next());
  const double present = t.mean_probe(held), missing = t.mean_probe(absent);
  MESSAGE("capacity " << capacity_before << " -> at most " << most_capacity << ", tombstones "
                      << "at most " << most_tombstones << ", mean probe present " << present
                      << ", absent " << missing);
  CHECK(most_tombstones > 0);
  CHECK(most_capacity <= capacity_before * 3 / 2);
  CHECK(present < 5);
  CHECK(missing < 35);  // (1 + 1/(1 − 0.875)²)/2 ≈ 33 at the very worst load
}

TEST_CASE("sparse table bytes per row beyond the floats stay at most 24 across growth cycles") {
  // From 65 536 rows (where one partly filled page weighs under 0.4 bytes a row) through at
  // least four growths of the index, sampled after every push: memory_bytes() less the
  // values and Adagrad's accumulator.
  for (uint32_t dim : {1u, 16u}) {
    CAPTURE(dim);
    sparse_table_config cfg;
    cfg.dim = dim;
    cfg.init = row_init::uniform;
    cfg.scale = 0.01f;
    cfg.optimizer.kind = row_optimizer_kind::adagrad;
    sparse_table table(cfg, 1, 0);
    constexpr std::size_t batch = 1000, rows = 300000;
    const std::vector<float> grads(batch * dim, 0.001f);
    std::vector<uint64_t> keys(batch);
    const double floats = 2.0 * dim * sizeof(float);
    double least = 1e9, most = 0;
    for (std::size_t at = 0; at < rows; at += batch) {
      for (std::size_t j = 0; j < batch; ++j) keys[j] = splitmix64_mix(at + j + 1);
      table.apply(keys.data(), batch, grads.data(), 1.0f);
      if (table.rows() < 65536) continue;
      const double beyond = double(table.memory_bytes()) / double(table.rows()) - floats;
      least = std::min(least, beyond);
      most = std::max(most, beyond);
    }
    REQUIRE(table.rows() == rows);
    MESSAGE("dim " << dim << ": " << least << " to " << most << " bytes a row beyond the floats");
    CHECK(most <= 24.0);
    CHECK(most - least > 1.0);  // the samples did cross growths of the index
  }
}

} // namespace
} // namespace actorps
