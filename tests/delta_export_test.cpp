// Delta export versions cost what changed, not the table: a shard asked for the state at an
// export clock since the version before sends only the rows pushed since (and tombstones),
// chosen by each row's last clock without exporting the table whole; the writer takes the
// shards' states as they come, and refuses a version whose states are some whole, some deltas;
// the chief asks each delta since the version before it, two versions ahead of the shards so
// that none is skipped, and a full one after a failure.
#include "actors/serving/export_after_run.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/sparse/row_optimizer.hpp"
#include "tests/two_shard_table.hpp"
#include "tests/simulation_fixture.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorps {

namespace {

using test::timeout;

sparse_table_config export_table_config(uint32_t admit_after, uint32_t evict_after) {
  sparse_table_config cfg;
  cfg.dim = 3;
  cfg.init = row_init::uniform;
  cfg.scale = 0.1f;
  cfg.admit_after = admit_after;
  cfg.evict_after = evict_after;
  cfg.optimizer.kind = row_optimizer_kind::adam;
  cfg.optimizer.learning_rate = 0.1f;
  return cfg;
}

void check_same(const sparse_table_rows& got, const sparse_table_rows& want) {
  CHECK(got.keys == want.keys);
  CHECK(got.values == want.values);
  CHECK(got.state == want.state);
  CHECK(got.touches == want.touches);
  CHECK(got.steps == want.steps);
  CHECK(got.clocks == want.clocks);
  CHECK(got.removed_keys == want.removed_keys);
  CHECK(got.pending_changes_only == want.pending_changes_only);
  CHECK(got.pending_keys == want.pending_keys);
  CHECK(got.pending_counts == want.pending_counts);
  CHECK(got.pending_clocks == want.pending_clocks);
  CHECK(got.removed_pending == want.removed_pending);
}

/// Two shards (the fixture serves shard 0), one sparse table of rows of 2 floats.
train_spec export_spec() { return test::two_shard_table_spec(); }

using test::keys_of;

struct export_shard : test::shard_fixture {
  using shard_fixture::shard_fixture;

  /// Pushes clock `clock` with a gradient of 0.5 for each of `keys` and waits for the answer.
  void push(int64_t clock, const std::vector<uint64_t>& keys) {
    std::vector<float> dense(layout.total_floats(), 0.0f), grads(keys.size() * 2, 0.5f);
    std::vector<sparse_rows_ref> rows;
    if (!keys.empty()) rows.push_back({0, 2, keys.data(), nullptr, keys.size(), grads.data()});
    REQUIRE(push_pull(encode_push(0, clock, 0, layout, dense.data(), 0, rows, {})));
  }
};

std::vector<uint64_t> sorted_union(std::vector<uint64_t> a, const std::vector<uint64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

/// The shard's state answering `asked` (a held export request), decoded, with one sparse table.
template <class Handle>
auto received_state(Handle& asked) {
  wire_buffer bytes;
  caf::error err;
  asked.receive([&](wire_buffer& b) { bytes = std::move(b); }, [&](caf::error& e) { err = e; });
  REQUIRE_MESSAGE(err == caf::none, describe(err));
  auto view = decode_shard_checkpoint(bytes);
  REQUIRE(view);
  REQUIRE(view->sparse.size() == 1);
  return view;
}

} // namespace

TEST_CASE("sparse_table: changed_rows holds what delta_of cuts from the whole table") {
  // With eviction and admission (rows stale, swept, started over; pending counts dropped),
  // with admission only, with neither.
  for (auto [admit_after, evict_after] : {std::pair{2u, 2u}, {3u, 0u}, {0u, 0u}}) {
    CAPTURE(admit_after);
    CAPTURE(evict_after);
    sparse_table table(export_table_config(admit_after, evict_after), 3, 0);
    table.track_removed(true);
    auto push = [&](std::vector<uint64_t> keys, int64_t clock) {
      std::vector<float> grads(keys.size() * 3, 0.5f);
      table.apply(keys.data(), keys.size(), grads.data(), 1.0f, clock);
    };
    for (int64_t c = 0; c < 4; ++c) push({1, 2, 3, 4, 5, 6, 7 + uint64_t(c), 100, 101}, c);
    for (int64_t c = 4; c < 9; ++c) push({1, 2, 20, 30 + uint64_t(c)}, c);
    table.sweep(9, 1000);
    push({5, 100}, 9);
    for (int64_t since : {0, 4, 6, 9}) {
      CAPTURE(since);
      for (int64_t now : {9, 10, 12}) {
        CAPTURE(now);
        check_same(table.changed_rows(since, now), table.delta_of(table.export_rows(now), since, now));
      }
    }
  }
}

TEST_CASE("export state: a delta holds the rows pushed since the version before, not the table") {
  const auto spec = export_spec();
  export_shard f(spec);
  // clock 0 creates 2 000 rows; clock 1 pushes none
  const auto table = keys_of(spec, 0, 2000, 1);
  f.push(0, table);
  f.push(1, {});
  auto whole = f.ask(f.shard, checkpoint_atom::value, snapshot_atom::value, int64_t{2}, int64_t{-1});
  REQUIRE(whole);
  auto first = decode_shard_checkpoint(*whole);
  REQUIRE(first);
  CHECK(first->delta_since == -1);
  REQUIRE(first->sparse.size() == 1);
  CHECK(first->sparse[0].keys.size() == 2000);

  // The next version's state, asked ahead since clock 2 (held until the shard gets to 5); 10
  // rows pushed at clock 2 (5 of them new), 6 at clock 4 (1 new, 1 pushed at clock 2 too).
  auto asked = (*f.self)->request(f.shard, timeout, checkpoint_atom::value, snapshot_atom::value,
                                  int64_t{5}, int64_t{2});
  std::vector<uint64_t> at_2(table.begin() + 100, table.begin() + 105), at_4{table[7]};
  const auto fresh = keys_of(spec, 0, 6, 1'000'000);
  at_2.insert(at_2.end(), fresh.begin(), fresh.begin() + 5);
  at_4.insert(at_4.end(), table.begin() + 1990, table.begin() + 1993);
  at_4.push_back(fresh[5]);
  at_4.push_back(table[100]);  // pushed again
  f.push(2, at_2);
  f.push(3, {});
  f.push(4, at_4);
  const auto delta = received_state(asked);
  CHECK(delta->clock == 5);
  CHECK(delta->delta_since == 2);
  const auto& rows = delta->sparse[0];
  // exactly the rows pushed since: what the shard copied and sent, not the 2 006 of its table
  const auto changed = sorted_union(at_2, at_4);
  CHECK(changed.size() == 15);
  CHECK(rows.keys == changed);
  CHECK(rows.removed_keys.empty());
  // each with the values the shard serves now
  std::vector<float> now;
  std::vector<sparse_rows_ref> ask{{0, 2, changed.data(), nullptr, changed.size(), nullptr}};
  auto reply = f.ask(f.shard, snapshot_atom::value, encode_pull(-1, 0, 0, ask));
  REQUIRE(reply);
  auto served = decode_shard_parameters(*reply);
  REQUIRE(served);
  for (const auto& p : served->sparse) now.assign(p.values, p.values + p.value_count);
  CHECK(rows.values == now);

  // A delta since a clock the shard answered no state of since its state was installed is not
  // one it can cut (a restored shard's): whole.
  f.push(5, {});
  auto other = f.ask(f.shard, checkpoint_atom::value, snapshot_atom::value, int64_t{6}, int64_t{1});
  REQUIRE(other);
  auto whole_again = decode_shard_checkpoint(*other);
  REQUIRE(whole_again);
  CHECK(whole_again->delta_since == -1);
  CHECK(whole_again->sparse[0].keys.size() == 2006);
}

TEST_CASE("export state: two requests held, each delta holds what changed since its own base") {
  // Rows quiet for 2 clocks are evicted: the shard keeps their tombstones for the deltas.
  auto spec = export_spec();
  spec.model.sparse_tables[0].config.evict_after = 2;
  export_shard f(spec);
  // always: pushed every clock; gone: pushed at clock 0 only; middle: at clocks 3 to 9;
  // late: from clock 10 on
  const auto keys = keys_of(spec, 0, 40, 1);
  const std::vector<uint64_t> always(keys.begin(), keys.begin() + 10),
    gone(keys.begin() + 10, keys.begin() + 20), middle(keys.begin() + 20, keys.begin() + 30),
    late(keys.begin() + 30, keys.end());
  f.push(0, sorted_union(always, gone));
  f.push(1, always);
  auto whole = f.ask(f.shard, checkpoint_atom::value, snapshot_atom::value, int64_t{2}, int64_t{-1});
  REQUIRE(whole);

  // Both asked before the shard gets to either: 8 a delta since 2, 14 one since 8.
  auto at_8 = (*f.self)->request(f.shard, timeout, checkpoint_atom::value, snapshot_atom::value,
                                 int64_t{8}, int64_t{2});
  auto at_14 = (*f.self)->request(f.shard, timeout, checkpoint_atom::value, snapshot_atom::value,
                                  int64_t{14}, int64_t{8});
  for (int64_t c = 2; c < 14; ++c) {
    auto pushed = always;
    if (c >= 3 && c <= 9) pushed = sorted_union(pushed, middle);
    if (c >= 10) pushed = sorted_union(pushed, late);
    f.push(c, pushed);
  }
  const auto first = received_state(at_8), second = received_state(at_14);
  CHECK(first->clock == 8);
  CHECK(first->delta_since == 2);
  CHECK(first->sparse[0].keys == sorted_union(always, middle));
  CHECK(first->sparse[0].removed_keys == gone);  // evicted since 2
  CHECK(second->clock == 14);
  CHECK(second->delta_since == 8);
  CHECK(second->sparse[0].keys == sorted_union(always, late));
  CHECK(second->sparse[0].removed_keys == middle);  // evicted since 8, not the ones before
}

TEST_CASE("export writer: the shards' states all whole or all deltas, never some of each") {
  const auto spec = export_spec();
  const block_layout layout(spec);
  auto state = [&](int32_t shard, int64_t since, std::vector<uint64_t> keys,
                   std::vector<uint64_t> removed) {
    std::vector<float> params(layout.shard_floats(shard), 0.25f);
    sparse_table_rows rows;
    rows.keys = std::move(keys);
    rows.values.assign(rows.keys.size() * 2, 1.0f);
    rows.touches.assign(rows.keys.size(), 1);
    rows.clocks.assign(rows.keys.size(), 5);
    rows.removed_keys = std::move(removed);
    return encode_shard_checkpoint(spec, shard, 6, 6, 6, layout, params.data(), nullptr, 0,
                                   {rows}, since);
  };
  const auto zero = keys_of(spec, 0, 4, 1), one = keys_of(spec, 1, 4, 1);
  SUBCASE("deltas since the same clock: their rows and tombstones, merged") {
    auto got = shard_state_changes({state(0, 3, {zero[0], zero[2]}, {zero[3]}),
                                    state(1, 3, {one[1]}, {one[0], one[2]})},
                                   spec, "states");
    CHECK(got.since == 3);
    CHECK(got.rows == 3);
    CHECK(got.params.tables.at(0).keys == sorted_union({zero[0], zero[2]}, {one[1]}));
    CHECK(got.removed.at(0) == sorted_union({zero[3]}, {one[0], one[2]}));
  }
  SUBCASE("one whole, one a delta: refused, naming both") {
    try {
      shard_state_changes({state(0, -1, zero, {}), state(1, 3, {one[1]}, {})}, spec, "states");
      FAIL("mixed states taken");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      CHECK(what.find("states/" + shard_file_name(1) + ": a delta since clock 3") != std::string::npos);
      CHECK(what.find("the whole state") != std::string::npos);
    }
  }
  SUBCASE("deltas since different clocks: refused") {
    CHECK_THROWS_AS(shard_state_changes({state(0, 3, {zero[0]}, {}), state(1, 4, {one[0]}, {})},
                                        spec, "states"),
                    std::invalid_argument);
  }
}

namespace {

struct written_version {
  int64_t clock, since;
};

/// A synthetic sync run of 60 clocks (2 workers at full speed, 2 shards) with an export version
/// every `every` clocks, every third full, through a writer of the test's own that keeps what it
/// was handed (the `fail_at`-th version's write fails).
std::vector<written_version> export_run(int64_t every, std::size_t fail_at) {
  auto opts = test::synthetic_run(consistency::sync, 2, 2, 60);
  opts.chief.eval_every = 0;
  auto seen = std::make_shared<std::vector<written_version>>();
  auto lock = std::make_shared<std::mutex>();
  opts.chief.exports.every = every;
  opts.chief.exports.full_every = 3;
  opts.chief.exports.write = [seen, lock, fail_at](int64_t clock,
                                                   const std::vector<wire_buffer>& shards) {
    std::lock_guard<std::mutex> hold(*lock);
    const auto since = shard_checkpoint_delta_since(shards.at(0));
    for (const auto& s : shards)
      if (shard_checkpoint_delta_since(s) != since) throw std::runtime_error("mixed states");
    seen->push_back({clock, since});
    if (seen->size() == fail_at) throw std::runtime_error("the disk is full");
    export_written done;
    done.version = seen->size();
    done.delta = since >= 0;
    return done;
  };
  auto summary = simulate(std::move(opts));
  REQUIRE_MESSAGE(summary, to_string(summary.error()));
  std::lock_guard<std::mutex> hold(*lock);
  return *seen;
}

} // namespace

TEST_CASE("export versions: the next one asked ahead, held by the shards before they reach it") {
  // Both versions of the run (20 and 40) are asked before the workers start: however far the
  // workers at full speed run ahead of the chief, the shards hold the request for 40 when they
  // get there, and none is skipped. (Asked only once 20's states came, 40 was skipped whenever
  // the chief lagged 20 clocks, 1 ms of this run.)
  const auto v = export_run(20, 0);
  REQUIRE(v.size() == 2);
  CHECK(v[0].clock == 20);
  CHECK(v[0].since == -1);
  CHECK(v[1].clock == 40);
  CHECK(v[1].since == 20);
}

TEST_CASE("export versions: each delta asked since the version before, a full one after a failure") {
  // A version every 5 clocks, the second one's write fails. The first two are asked before the
  // workers start; later ones may pass or be skipped when the chief lags the workers at full
  // speed, so whatever is written is checked: each delta is of the version written before it,
  // never of the failed one (the version asked as its delta is asked again whole, or skipped
  // when its states came already), at most two deltas in a row, full after the failure.
  const auto v = export_run(5, 2);
  REQUIRE(v.size() >= 2);
  CHECK(v[0].clock == 5);
  CHECK(v[0].since == -1);
  CHECK(v[1].clock == 10);
  CHECK(v[1].since == 5);  // failed
  int deltas = 0;
  for (std::size_t i = 2; i < v.size(); ++i) {
    CAPTURE(i);
    CHECK(v[i].clock > v[i - 1].clock);
    CHECK(v[i].clock % 5 == 0);
    if (i == 2) CHECK(v[i].since == -1);  // so the next is full
    if (v[i].since < 0) {
      deltas = 0;
      continue;
    }
    CHECK(v[i].since == v[i - 1].clock);
    CHECK(++deltas <= 2);
  }
}

} // namespace actorps
