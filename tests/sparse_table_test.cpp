// sparse_table: rows that start the same wherever and whenever they are created, reads that
// create nothing, admission, per-row Adam steps, a bit-exact checkpoint form, and memory that
// memory_bytes() reports honestly (checked against malloc's own count).
#include "kernels/sparse/key_buckets.hpp"
#include "kernels/sparse/sparse_table.hpp"
#include "actors/ps/splitmix64.hpp"

#include <doctest/doctest.h>

#include <malloc.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <algorithm>
#include <string>
#include <vector>

namespace actorps {
namespace {

/// n distinct keys spread over all 64 bits (the mix is a bijection).
std::vector<uint64_t> keys_for(std::size_t n, uint64_t salt = 0) {
  std::vector<uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = splitmix64_mix(salt * 1000003 + i + 1);
  return keys;
}

/// Deterministic gradients in [−1, 1).
std::vector<float> grads_for(std::size_t n, uint64_t seed) {
  splitmix64 rng(seed);
  std::vector<float> g(n);
  for (float& v : g) v = static_cast<float>(2 * rng.next_unit() - 1);
  return g;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

void check_same_rows(const sparse_table_rows& a, const sparse_table_rows& b) {
  CHECK(a.keys == b.keys);
  CHECK(same_bits(a.values, b.values));
  CHECK(same_bits(a.state, b.state));
  CHECK(a.touches == b.touches);
  CHECK(a.steps == b.steps);
  CHECK(a.pending_keys == b.pending_keys);
  CHECK(a.pending_counts == b.pending_counts);
}

sparse_table_config config(uint32_t dim, row_optimizer_kind kind, row_init init = row_init::zeros,
                           float scale = 0.0f) {
  sparse_table_config cfg;
  cfg.dim = dim;
  cfg.init = init;
  cfg.scale = scale;
  cfg.optimizer.kind = kind;
  cfg.optimizer.learning_rate = 0.1f;
  return cfg;
}

std::vector<float> read_all(const sparse_table& table, const std::vector<uint64_t>& keys) {
  std::vector<float> out(keys.size() * table.config().dim, -1.0f);
  table.read(keys.data(), keys.size(), out.data());
  return out;
}

/// Round r of a test's pushes: keys [begin, begin + count) with begin = r × 97 mod `spread`
/// and count = 150 + r mod 50, gradients grads_for(count × dim, r), rate scale 1 / (r + 1).
/// Rounds overlap, so that some keys are admitted, some pending, and Adam's steps differ.
struct push_round {
  std::size_t begin, count;
  std::vector<float> grads;
  float lr_scale;
};

push_round round_of(uint64_t r, std::size_t spread, uint32_t dim) {
  const std::size_t count = 150 + r % 50;
  return {(r * 97) % spread, count, grads_for(count * dim, r), 1.0f / float(r + 1)};
}

/// Rounds [first, first + rounds) of round_of pushed into `table`, each at the clock of its
/// number.
void push_rounds(sparse_table& table, const std::vector<uint64_t>& keys, std::size_t spread,
                 uint64_t first, uint64_t rounds) {
  const auto dim = table.config().dim;
  for (uint64_t r = first; r < first + rounds; ++r) {
    const auto p = round_of(r, spread, dim);
    table.apply(keys.data() + p.begin, p.count, p.grads.data(), p.lr_scale, int64_t(r));
  }
}

/// Bytes malloc hands out right now: the main arena's chunks in use plus mmap'd blocks.
std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

} // namespace

TEST_CASE("sparse table refuses dim 0, a bad scale and a bad optimizer, by name") {
  auto cfg = config(0, row_optimizer_kind::sgd);
  CHECK_THROWS_WITH_AS(sparse_table(cfg, 1, 0), doctest::Contains("dim"), std::invalid_argument);
  cfg = config(4, row_optimizer_kind::sgd, row_init::normal, -1.0f);
  CHECK_THROWS_WITH_AS(sparse_table(cfg, 1, 0), doctest::Contains("scale"),
                       std::invalid_argument);
  cfg = config(4, row_optimizer_kind::adam);
  cfg.optimizer.beta2 = 1.0f;
  CHECK_THROWS_WITH_AS(sparse_table(cfg, 1, 0), doctest::Contains("beta2"),
                       std::invalid_argument);
  CHECK(parse_row_init("normal") == row_init::normal);
  CHECK(std::string(to_string(row_init::uniform)) == "uniform");
  CHECK_FALSE(parse_row_init("gaussian").has_value());
}

TEST_CASE("sparse table rows start the same on any shard, in any insertion order") {
  const auto cfg = config(5, row_optimizer_kind::sgd, row_init::normal, 0.5f);
  const std::vector<uint64_t> keys = keys_for(300);
  const std::vector<float> zero_grads(keys.size() * cfg.dim, 0.0f);  // sgd: values stay put

  sparse_table ascending(cfg, 7, 3), descending(cfg, 7, 3);
  ascending.apply(keys.data(), keys.size(), zero_grads.data(), 1.0f);
  const std::vector<uint64_t> reversed(keys.rbegin(), keys.rend());
  for (std::size_t at = 0; at < reversed.size(); at += 3) {  // three keys a push
    descending.apply(reversed.data() + at, 3, zero_grads.data(), 1.0f);
  }
  // Two shards that own the keys by bucket, as a cluster places them.
  const std::vector<int32_t> owner = assign_buckets(default_bucket_count, 2);
  std::vector<sparse_table> shards;
  shards.emplace_back(cfg, 7, 3);
  shards.emplace_back(cfg, 7, 3);
  for (uint64_t key : keys) {
    shards[owner[bucket_of(key, default_bucket_count)]].apply(&key, 1, zero_grads.data(), 1.0f);
  }
  CHECK(shards[0].rows() + shards[1].rows() == keys.size());
  CHECK(shards[0].rows() > 100);
  CHECK(shards[1].rows() > 100);

  const std::vector<float> expected = read_all(sparse_table(cfg, 7, 3), keys);  // nothing pushed
  CHECK(same_bits(read_all(ascending, keys), expected));
  CHECK(same_bits(read_all(descending, keys), expected));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::vector<float> direct(cfg.dim), on_shard(cfg.dim);
    initial_row_values(cfg, 7, 3, keys[i], direct.data());
    shards[owner[bucket_of(keys[i], default_bucket_count)]].read(&keys[i], 1, on_shard.data());
    REQUIRE(same_bits(direct, std::vector<float>(expected.begin() + i * cfg.dim,
                                                 expected.begin() + (i + 1) * cfg.dim)));
    REQUIRE(same_bits(on_shard, direct));
  }
  // Another table index or seed gives other values.
  std::size_t equal_to_other_table = 0, equal_to_other_seed = 0;
  const std::vector<float> other_table = read_all(sparse_table(cfg, 7, 4), keys);
  const std::vector<float> other_seed = read_all(sparse_table(cfg, 8, 3), keys);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    equal_to_other_table += expected[i] == other_table[i];
    equal_to_other_seed += expected[i] == other_seed[i];
  }
  CHECK(equal_to_other_table == 0);
  CHECK(equal_to_other_seed == 0);
}

TEST_CASE("sparse table initial values have the configured spread") {
  constexpr std::size_t keys = 20000;
  constexpr uint32_t dim = 5;  // odd: the last Box–Muller pair is cut in half
  for (row_init init : {row_init::zeros, row_init::uniform, row_init::normal}) {
    const std::string name = to_string(init);
    CAPTURE(name);
    const auto cfg = config(dim, row_optimizer_kind::sgd, init, 0.5f);
    double sum = 0, sum_squares = 0, largest = 0;
    std::vector<float> row(dim);
    for (uint64_t key = 0; key < keys; ++key) {
      initial_row_values(cfg, 11, 0, key, row.data());
      for (float v : row) {
        sum += v;
        sum_squares += double(v) * v;
        largest = std::max(largest, std::fabs(double(v)));
      }
    }
    const double n = keys * dim, mean = sum / n, sd = std::sqrt(sum_squares / n - mean * mean);
    MESSAGE(name << ": mean " << mean << ", sd " << sd << ", largest |v| " << largest);
    if (init == row_init::zeros) {
      CHECK(largest == 0.0);
      continue;
    }
    const double expected_sd = init == row_init::uniform ? 0.5 / std::sqrt(3.0) : 0.5;
    CHECK(std::fabs(mean) < 5 * expected_sd / std::sqrt(n));
    CHECK(sd == doctest::Approx(expected_sd).epsilon(0.02));
    if (init == row_init::uniform) CHECK(largest <= 0.5);
    if (init == row_init::normal) CHECK(largest > 3 * 0.5);  // real tails, not a sum of uniforms
  }
}

TEST_CASE("sparse table read never creates a row nor counts a push") {
  auto cfg = config(4, row_optimizer_kind::adagrad, row_init::uniform, 0.1f);
  const std::vector<uint64_t> keys = keys_for(100);
  sparse_table table(cfg, 1, 0);
  const std::size_t bytes = table.memory_bytes();
  const std::vector<float> first = read_all(table, keys), second = read_all(table, keys);
  CHECK(table.rows() == 0);
  CHECK(table.memory_bytes() == bytes);
  CHECK(same_bits(first, second));
  CHECK(first[0] != 0.0f);  // the would-be initial values, not zeros

  cfg.admit_after = 2;
  sparse_table admitting(cfg, 1, 0);
  CHECK(read_all(admitting, keys) == std::vector<float>(keys.size() * 4, 0.0f));
  CHECK(admitting.rows() == 0);
  CHECK(admitting.pending() == 0);
}

TEST_CASE("sparse table a read of many keys gives each what its row or its initial value holds") {
  // read() looks keys up in a pipeline (slots and rows prefetched keys ahead): every length
  // around its stages' distances, rows found, stale and never pushed mixed in, each checked
  // against the table's export (rows) or an empty table's one-key read (initial values).
  auto cfg = config(3, row_optimizer_kind::adagrad, row_init::uniform, 0.3f);
  cfg.evict_after = 5;
  const std::vector<uint64_t> old_keys = keys_for(300, 1), live_keys = keys_for(300, 2),
                              unseen = keys_for(300, 3);
  sparse_table table(cfg, 9, 2), empty(cfg, 9, 2);
  const auto g = grads_for(300 * cfg.dim, 5);
  table.apply(old_keys.data(), old_keys.size(), g.data(), 1.0f, 0);
  table.apply(live_keys.data(), live_keys.size(), g.data(), 1.0f, 10);
  const sparse_table_rows rows = table.export_rows(10);
  REQUIRE(rows.keys.size() == live_keys.size());  // the old rows are stale at clock 10
  std::vector<uint64_t> mixed;
  for (std::size_t i = 0; i < 300; ++i) {
    mixed.push_back(live_keys[i]);
    if (i % 3 == 0) mixed.push_back(old_keys[i]);
    if (i % 4 == 0) mixed.push_back(unseen[i]);
  }
  for (const std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(15), std::size_t(16),
                              std::size_t(17), std::size_t(31), std::size_t(32), std::size_t(33),
                              std::size_t(48), std::size_t(65), mixed.size()}) {
    CAPTURE(n);
    std::vector<float> out(n * cfg.dim + 1, -7.0f);
    table.read(mixed.data(), n, out.data(), 10);
    CHECK(out[n * cfg.dim] == -7.0f);  // nothing written past the n-th row
    std::size_t from_rows = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<float> want(cfg.dim);
      const auto at = std::lower_bound(rows.keys.begin(), rows.keys.end(), mixed[i]);
      if (at != rows.keys.end() && *at == mixed[i]) {
        const auto row = std::size_t(at - rows.keys.begin());
        std::copy_n(rows.values.begin() + row * cfg.dim, cfg.dim, want.begin());
        ++from_rows;
      } else {
        empty.read(&mixed[i], 1, want.data(), 10);
      }
      CHECK(std::memcmp(want.data(), out.data() + i * cfg.dim, cfg.dim * sizeof(float)) == 0);
    }
    if (n == mixed.size()) CHECK(from_rows == live_keys.size());
  }
  CHECK(table.rows() == old_keys.size() + live_keys.size());  // reads evict nothing
}

TEST_CASE("sparse table admission: N - 1 pushes leave no row, the N-th creates it") {
  auto cfg = config(3, row_optimizer_kind::sgd, row_init::uniform, 0.5f);
  cfg.admit_after = 3;
  sparse_table table(cfg, 5, 2);
  const uint64_t key = 42, other = 43;
  const std::vector<float> g1 = {1, 2, 3}, g2 = {4, 5, 6}, g3 = {0.5f, -0.25f, 1.0f};

  table.apply(&key, 1, g1.data(), 1.0f);
  table.apply(&other, 1, g1.data(), 1.0f);
  table.apply(&key, 1, g2.data(), 1.0f);
  CHECK(table.rows() == 0);
  CHECK(table.pending() == 2);
  CHECK(read_all(table, {key, other}) == std::vector<float>(6, 0.0f));

  table.apply(&key, 1, g3.data(), 1.0f);  // the 3rd push: created, then only g3 applied
  CHECK(table.rows() == 1);
  CHECK(table.pending() == 1);
  std::vector<float> expected(3);
  initial_row_values(cfg, 5, 2, key, expected.data());
  apply_row_update(cfg.optimizer, 1.0f, 1, expected.data(), g3.data(), nullptr, 3);
  CHECK(same_bits(read_all(table, {key}), expected));
  CHECK(read_all(table, {other}) == std::vector<float>(3, 0.0f));

  table.apply(&key, 1, g1.data(), 1.0f);
  const sparse_table_rows saved = table.export_rows();
  CHECK(saved.keys == std::vector<uint64_t>{key});
  CHECK(saved.touches == std::vector<uint32_t>{4});  // the two counted pushes included
  CHECK(saved.pending_keys == std::vector<uint64_t>{other});
  CHECK(saved.pending_counts == std::vector<uint32_t>{1});

  cfg.admit_after = 1;  // 1 means the same as 0: the first push creates the row
  sparse_table immediate(cfg, 5, 2);
  immediate.apply(&key, 1, g1.data(), 1.0f);
  CHECK(immediate.rows() == 1);
  CHECK(immediate.pending() == 0);
}

TEST_CASE("sparse table adam counts steps per row, as rows are pushed at different rates") {
  const auto cfg = config(2, row_optimizer_kind::adam, row_init::normal, 0.3f);
  sparse_table table(cfg, 9, 0);
  const uint64_t often = 10, once = 20;
  const std::vector<std::vector<float>> grads = {{0.5f, -1}, {0.25f, 0.75f}, {-2, 0.125f}};
  std::vector<float> ref_often(2), ref_once(2), m_v_often(4, 0.0f), m_v_once(4, 0.0f);
  initial_row_values(cfg, 9, 0, often, ref_often.data());
  initial_row_values(cfg, 9, 0, once, ref_once.data());
  for (uint32_t push = 1; push <= 3; ++push) {
    table.apply(&often, 1, grads[push - 1].data(), 0.5f);
    apply_row_update(cfg.optimizer, 0.5f, push, ref_often.data(), grads[push - 1].data(),
                     m_v_often.data(), 2);
  }
  table.apply(&once, 1, grads[2].data(), 0.5f);
  apply_row_update(cfg.optimizer, 0.5f, 1, ref_once.data(), grads[2].data(), m_v_once.data(), 2);

  CHECK(same_bits(read_all(table, {often}), ref_often));
  CHECK(same_bits(read_all(table, {once}), ref_once));
  const sparse_table_rows saved = table.export_rows();
  CHECK(saved.keys == std::vector<uint64_t>{often, once});
  CHECK(saved.steps == std::vector<uint32_t>{3, 1});
  CHECK(saved.touches == std::vector<uint32_t>{3, 1});
  CHECK(same_bits(std::vector<float>(saved.state.begin(), saved.state.begin() + 4), m_v_often));
}

TEST_CASE("sparse table a push of many keys updates rows as one key at a time would") {
  auto cfg = config(3, row_optimizer_kind::adam, row_init::normal, 0.2f);
  cfg.admit_after = 2;
  const std::vector<uint64_t> keys = keys_for(300);
  sparse_table batched(cfg, 4, 0), one_by_one(cfg, 4, 0);
  for (uint64_t round = 0; round < 5; ++round) {
    // Overlapping ranges: rows that exist, keys pending and new keys mixed in every push.
    std::vector<uint64_t> push(keys.begin() + round * 40, keys.begin() + round * 40 + 100);
    push.push_back(push[3]);  // a repeat (refused by callers) still applies once per occurrence
    const auto grads = grads_for(push.size() * cfg.dim, round);
    batched.apply(push.data(), push.size(), grads.data(), 0.5f);
    for (std::size_t i = 0; i < push.size(); ++i) {
      one_by_one.apply(&push[i], 1, grads.data() + i * cfg.dim, 0.5f);
    }
  }
  REQUIRE(batched.rows() > 100);
  check_same_rows(batched.export_rows(), one_by_one.export_rows());
}

TEST_CASE("sparse table a push and a read in parts give what one part gives, bit for bit") {
  // parts > 1 updates the rows found on threads of their own (parallel_parts.hpp): every
  // optimizer's state, Adam's steps, refused rows and admission come out as on one thread.
  for (const auto kind : {row_optimizer_kind::adagrad, row_optimizer_kind::adam,
                          row_optimizer_kind::ftrl}) {
    for (const uint32_t admit : {1u, 2u}) {
      CAPTURE(int(kind));
      CAPTURE(admit);
      auto cfg = config(5, kind, row_init::normal, 0.2f);
      cfg.admit_after = admit;
      const std::vector<uint64_t> keys = keys_for(3100, 11);  // the last range ends at 3100
      sparse_table one(cfg, 4, 1), split(cfg, 4, 1);
      one.set_max_parameter(0.3f);  // rows that would pass it are refused
      split.set_max_parameter(0.3f);
      std::size_t refused = 0;
      for (uint64_t round = 0; round < 6; ++round) {
        // Overlapping ranges of unique keys: rows found, keys pending and new keys mixed.
        const std::size_t begin = round * 400, count = round == 5 ? 2 : 1500;
        auto grads = grads_for(count * cfg.dim, round);
        for (std::size_t i = 0; i < grads.size(); i += 37) grads[i] *= 40.0f;
        const std::size_t parts = 2 + round % 3;  // 2, 3, 4; the last push: fewer keys than parts
        const auto a = one.apply(keys.data() + begin, count, grads.data(), 0.5f, int64_t(round));
        const auto b = split.apply(keys.data() + begin, count, grads.data(), 0.5f,
                                   int64_t(round), parts);
        CHECK(a == b);
        CHECK(one.rows() == split.rows());
        refused += a;
      }
      CHECK(refused > 0);
      REQUIRE(one.rows() > 1000);
      check_same_rows(one.export_rows(), split.export_rows());
      for (const std::size_t parts : {2, 3, 7}) {
        std::vector<float> whole(keys.size() * cfg.dim), in_parts(keys.size() * cfg.dim, -1.0f);
        one.read(keys.data(), keys.size(), whole.data());
        one.read(keys.data(), keys.size(), in_parts.data(), 0, parts);
        CHECK(same_bits(whole, in_parts));
      }
    }
  }
}

TEST_CASE("sparse table find_duplicate names the first repeated key") {
  const std::vector<uint64_t> repeated = {5, 7, 9, 7, 5};
  CHECK(find_duplicate(repeated.data(), repeated.size()) == std::optional<std::size_t>(3));
  const std::vector<uint64_t> unique = keys_for(1000);
  CHECK_FALSE(find_duplicate(unique.data(), unique.size()).has_value());
  CHECK_FALSE(find_duplicate(nullptr, 0).has_value());
}

TEST_CASE("sparse table export and import round-trip bit for bit, then update identically") {
  auto cfg = config(3, row_optimizer_kind::adam, row_init::normal, 0.2f);
  cfg.admit_after = 2;
  const std::vector<uint64_t> keys = keys_for(500);
  // Rounds over overlapping key ranges: some keys admitted, some pending, steps differ.
  auto rounds = [&](sparse_table& table, uint64_t first, uint64_t count) {
    push_rounds(table, keys, 300, first, count);
  };
  sparse_table original(cfg, 3, 1);
  rounds(original, 0, 6);
  const sparse_table_rows saved = original.export_rows();
  REQUIRE(saved.keys.size() > 100);
  REQUIRE(saved.pending_keys.size() > 10);
  CHECK(std::is_sorted(saved.keys.begin(), saved.keys.end()));

  sparse_table restored(cfg, 3, 1);
  rounds(restored, 40, 2);  // contents that the import must replace, not merge with
  restored.import_rows(saved);
  CHECK(restored.rows() == original.rows());
  CHECK(restored.pending() == original.pending());
  check_same_rows(restored.export_rows(), saved);

  rounds(original, 6, 5);
  rounds(restored, 6, 5);
  check_same_rows(restored.export_rows(), original.export_rows());
  CHECK(same_bits(read_all(restored, keys), read_all(original, keys)));
}

TEST_CASE("sparse table import refuses mismatched rows and keeps what it had") {
  auto cfg = config(2, row_optimizer_kind::adagrad, row_init::uniform, 0.1f);
  cfg.admit_after = 3;
  sparse_table table(cfg, 1, 0);
  const std::vector<uint64_t> keys = {3, 1, 2};
  const std::vector<float> grads = grads_for(6, 1);
  for (int push = 0; push < 3; ++push) table.apply(keys.data(), 3, grads.data(), 1.0f);
  const uint64_t lone = 9;
  table.apply(&lone, 1, grads.data(), 1.0f);
  const sparse_table_rows good = table.export_rows();
  REQUIRE(good.keys == std::vector<uint64_t>{1, 2, 3});

  auto refused = [&](const char* what, auto&& corrupt) {
    CAPTURE(what);
    sparse_table_rows bad = good;
    corrupt(bad);
    CHECK_THROWS_WITH_AS(table.import_rows(bad), doctest::Contains(what), std::invalid_argument);
    check_same_rows(table.export_rows(), good);
  };
  refused("values holds 5 entries, 6 expected", [](auto& r) { r.values.pop_back(); });
  refused("state holds 7 entries, 6 expected", [](auto& r) { r.state.push_back(0); });
  refused("touches", [](auto& r) { r.touches.pop_back(); });
  refused("steps holds 3 entries, 0 expected", [](auto& r) { r.steps = {1, 1, 1}; });
  refused("keys are not strictly ascending at row 2", [](auto& r) { r.keys[2] = 2; });
  refused("pending_counts", [](auto& r) { r.pending_counts.clear(); });
  refused("outside [1, 3)", [](auto& r) { r.pending_counts[0] = 3; });
  refused("key 2 is both a row and pending", [](auto& r) { r.pending_keys[0] = 2; });

  sparse_table no_admission(config(2, row_optimizer_kind::adagrad), 1, 0);
  CHECK_THROWS_WITH_AS(no_admission.import_rows(good), doctest::Contains("pending keys"),
                       std::invalid_argument);
}

TEST_CASE("sparse table buckets that move: rows out of one table, into another, bit for bit") {
  // One table's keys split by a key test (a bucket placement's), its picked rows handed to a
  // second table that holds others: both then read and update as one table would.
  auto cfg = config(3, row_optimizer_kind::adam, row_init::normal, 0.2f);
  cfg.admit_after = 2;
  const std::vector<uint64_t> keys = keys_for(600);
  auto rounds = [&](sparse_table& table, uint64_t first, uint64_t count) {
    push_rounds(table, keys, 400, first, count);
  };
  const sparse_table::key_filter odd = [](uint64_t key, const void*) { return key % 2 == 1; };
  const sparse_table::key_filter even = [](uint64_t key, const void*) { return key % 2 == 0; };
  sparse_table whole(cfg, 3, 1);
  rounds(whole, 0, 8);
  const auto all = whole.export_rows();
  REQUIRE(all.keys.size() > 200);
  REQUIRE(all.pending_keys.size() > 10);
  // source: every key; destination: the odd keys' rows taken from an export of its own
  sparse_table source(cfg, 3, 1), destination(cfg, 3, 1);
  source.import_rows(all);
  const auto moving = source.export_rows_of(odd, nullptr);
  CHECK(std::all_of(moving.keys.begin(), moving.keys.end(), [](uint64_t k) { return k % 2; }));
  CHECK(std::all_of(moving.pending_keys.begin(), moving.pending_keys.end(),
                    [](uint64_t k) { return k % 2; }));
  CHECK(std::is_sorted(moving.keys.begin(), moving.keys.end()));
  CHECK(moving.clocks.size() == moving.keys.size());
  const auto rows_before = source.rows();
  CHECK(source.drop_rows_of(odd, nullptr) == moving.keys.size());
  CHECK(source.rows() == rows_before - moving.keys.size());
  CHECK(source.evicted() == 0);  // handed over, not evicted
  CHECK(source.removed_remembered() == 0);
  const auto staying = source.export_rows();
  CHECK(std::all_of(staying.keys.begin(), staying.keys.end(), [](uint64_t k) { return !(k % 2); }));
  CHECK(std::all_of(staying.pending_keys.begin(), staying.pending_keys.end(),
                    [](uint64_t k) { return !(k % 2); }));
  destination.take_rows(moving);
  // the two halves hold every row and pending count of the whole, bit for bit
  CHECK(source.rows() + destination.rows() == whole.rows());
  CHECK(source.pending() + destination.pending() == whole.pending());
  check_same_rows(destination.export_rows(), moving);
  check_same_rows(source.export_rows(), whole.export_rows_of(even, nullptr));
  CHECK(destination.export_rows().clocks == moving.clocks);
  // and train on as the whole does: each key on the half that holds it
  rounds(whole, 8, 4);
  for (uint64_t r = 8; r < 12; ++r) {
    const auto p = round_of(r, 400, cfg.dim);
    for (auto* half : {&source, &destination}) {
      std::vector<uint64_t> mine;
      std::vector<float> g;
      for (std::size_t i = 0; i < p.count; ++i) {
        const auto key = keys[p.begin + i];
        if ((key % 2 == 1) != (half == &destination)) continue;
        mine.push_back(key);
        g.insert(g.end(), p.grads.begin() + std::ptrdiff_t(i * cfg.dim),
                 p.grads.begin() + std::ptrdiff_t((i + 1) * cfg.dim));
      }
      half->apply(mine.data(), mine.size(), g.data(), p.lr_scale, int64_t(r));
    }
  }
  check_same_rows(destination.export_rows(), whole.export_rows_of(odd, nullptr));
  check_same_rows(source.export_rows(), whole.export_rows_of(even, nullptr));
  // a key held already is refused, and nothing changes
  const auto held = destination.export_rows();
  CHECK_THROWS_WITH_AS(destination.take_rows(moving), doctest::Contains("is held here already"),
                       std::invalid_argument);
  check_same_rows(destination.export_rows(), held);
  auto bad = source.export_rows_of(even, nullptr);
  bad.values.pop_back();
  CHECK_THROWS_WITH_AS(destination.take_rows(bad),
                       doctest::Contains("take_rows: values holds"), std::invalid_argument);
  check_same_rows(destination.export_rows(), held);
}

TEST_CASE("sparse table rows split by destination: each part as its own key test exports it") {
  // A shard's hand-over addressed to each new shard: key % 4 == 0 stays, 1, 2 and 3 go to
  // parts 0, 1 and 2; in a table whose pending counts are a sketch the parts carry none, and a
  // table that takes them keeps its own.
  for (uint32_t memory : {0u, 4096u}) {
    CAPTURE(memory);
    auto cfg = config(2, row_optimizer_kind::adam, row_init::normal, 0.2f);
    cfg.admit_after = 2;
    cfg.admission_memory = memory;
    const auto keys = keys_for(600);
    sparse_table table(cfg, 3, 1);
    push_rounds(table, keys, 400, 0, 8);
    const sparse_table::key_part to = [](uint64_t key, const void*) {
      return static_cast<int32_t>(key % 4) - 1;
    };
    const auto parts = table.export_parts(to, nullptr, 3);
    REQUIRE(parts.size() == 3);
    std::size_t rows = 0;
    for (uint32_t p = 0; p < 3; ++p) {
      CAPTURE(p);
      const sparse_table::key_filter mine[] = {
        [](uint64_t key, const void*) { return key % 4 == 1; },
        [](uint64_t key, const void*) { return key % 4 == 2; },
        [](uint64_t key, const void*) { return key % 4 == 3; }};
      const auto alone = table.export_rows_of(mine[p], nullptr);
      CHECK(!parts[p].keys.empty());
      check_same_rows(parts[p], alone);
      CHECK(parts[p].clocks == alone.clocks);
      CHECK(parts[p].sketch.depth == 0);
      CHECK((alone.sketch.depth > 0) == (memory > 0));
      CHECK(parts[p].pending_keys.empty() == (memory > 0));
      rows += parts[p].keys.size();
    }
    const sparse_table::key_filter staying = [](uint64_t key, const void*) { return key % 4 == 0; };
    CHECK(rows + table.export_rows_of(staying, nullptr).keys.size() == table.rows());
    CHECK(table.admission_state().depth == (memory > 0 ? table.export_rows().sketch.depth : 0));
    // taken by a table that has a sketch of its own: the rows come, its sketch stays
    sparse_table other(cfg, 3, 1);
    push_rounds(other, keys_for(600, 7), 400, 0, 2);
    const auto sketch_before = other.admission_state();
    sparse_table empty(cfg, 3, 1);
    empty.take_rows(parts[1]);
    check_same_rows(empty.export_rows(), parts[1]);
    if (memory > 0) {
      sparse_table with_sketch(cfg, 3, 1);
      with_sketch.import_rows(other.export_rows());
      with_sketch.take_rows(parts[2]);
      CHECK(with_sketch.admission_state().counters == sketch_before.counters);
    }
  }
}

TEST_CASE("sparse table apply refuses a bad lr_scale and changes nothing") {
  sparse_table table(config(2, row_optimizer_kind::sgd), 1, 0);
  const uint64_t key = 1;
  const float grad[2] = {1, 1};
  for (float bad : {-0.5f, NAN, INFINITY}) {
    CHECK_THROWS_WITH_AS(table.apply(&key, 1, grad, bad), doctest::Contains("lr_scale"),
                         std::invalid_argument);
  }
  CHECK(table.rows() == 0);
}

TEST_CASE("sparse table ftrl: l1 keeps weakly pushed rows at exactly zero") {
  auto cfg = config(4, row_optimizer_kind::ftrl);
  cfg.optimizer.learning_rate = 0.5f;
  cfg.optimizer.l1 = 1.0f;
  sparse_table table(cfg, 1, 0);
  const std::vector<uint64_t> keys = keys_for(50);
  for (uint64_t round = 0; round < 5; ++round) {
    std::vector<float> grads = grads_for(keys.size() * 4, round);
    for (float& g : grads) g *= 0.1f;  // |z| ≤ 5 · 0.1 < l1 throughout
    grads[0] = 2.0f;                   // except the first value of the first key
    table.apply(keys.data(), keys.size(), grads.data(), 1.0f);
  }
  const std::vector<float> values = read_all(table, keys);
  CHECK(table.rows() == 50);
  CHECK(values[0] < -0.1f);
  std::size_t exact_zeros = 0;
  for (std::size_t i = 1; i < values.size(); ++i) exact_zeros += values[i] == 0.0f;
  CHECK(exact_zeros == values.size() - 1);
}

TEST_CASE("sparse table bytes per row (dim 1 and 16, adagrad) match what malloc handed out") {
  constexpr std::size_t rows = 200000, batch = 1000;
  for (uint32_t dim : {1u, 16u}) {
    CAPTURE(dim);
    const std::vector<uint64_t> keys = keys_for(rows, dim);
    const std::vector<float> grads = grads_for(batch * dim, dim);
    const std::size_t heap_before = heap_in_use();
    {
      sparse_table table(config(dim, row_optimizer_kind::adagrad, row_init::uniform, 0.01f), 1, 0);
      for (std::size_t at = 0; at < rows; at += batch) {
        table.apply(keys.data() + at, batch, grads.data(), 1.0f);
      }
      REQUIRE(table.rows() == rows);
      const double heap = double(heap_in_use() - heap_before);
      // memory_bytes() counts the object itself, which is on the stack here.
      const double reported = double(table.memory_bytes()) - sizeof(table);
      const double floats = 2.0 * dim * sizeof(float);  // value + accumulator
      MESSAGE("dim " << dim << " adagrad, " << rows << " rows: memory_bytes/row "
                     << reported / rows << " (floats " << floats << ", the rest "
                     << reported / rows - floats << "); malloc's count/row " << heap / rows);
      CHECK(reported == doctest::Approx(heap).epsilon(0.03));
    }
  }
}

} // namespace actorps
