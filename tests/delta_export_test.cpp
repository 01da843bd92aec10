// Delta export versions cost what changed, not the table: a shard asked for the state at an
// export clock since the version before sends only the rows pushed since (and tombstones),
// chosen by each row's last clock without exporting the table whole; the writer takes the
// shards' states as they come, and refuses a version whose states are some whole, some deltas;
// the chief asks each delta since the version before it, and a full one after a failure.
#include "actors/serving/export_after_run.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/sparse/row_optimizer.hpp"
#include "tests/two_shard_table.hpp"
#include "tests/simulation_fixture.hpp"

#include <doctest/doctest.h>

#include <algorithm>
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
  wire_buffer bytes;
  caf::error err;
  asked.receive([&](wire_buffer& b) { bytes = std::move(b); }, [&](caf::error& e) { err = e; });
  REQUIRE_MESSAGE(err == caf::none, describe(err));
  auto delta = decode_shard_checkpoint(bytes);
  REQUIRE(delta);
  CHECK(delta->clock == 5);
  CHECK(delta->delta_since == 2);
  REQUIRE(delta->sparse.size() == 1);
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

TEST_CASE("export versions: each delta asked since the version before, a full one after a failure") {
  // The chief's side with a writer of the test's own: every third version full, the second
  // version's write fails. A version the shards are past when it is asked (the chief lagging on
  // a loaded machine) is skipped and not written, and the pattern counts written versions only:
  // the workers take a few ms a clock so that enough of them are.
  auto opts = test::synthetic_run(consistency::sync, 2, 2, 60);
  opts.chief.eval_every = 0;
  opts.chief.slow_ms = {5, 5};
  struct asked {
    int64_t clock, since;
  };
  auto seen = std::make_shared<std::vector<asked>>();
  auto lock = std::make_shared<std::mutex>();
  opts.chief.exports.every = 5;
  opts.chief.exports.full_every = 3;
  opts.chief.exports.write = [seen, lock](int64_t clock, const std::vector<wire_buffer>& shards) {
    std::lock_guard<std::mutex> hold(*lock);
    const auto since = shard_checkpoint_delta_since(shards.at(0));
    for (const auto& s : shards)
      if (shard_checkpoint_delta_since(s) != since) throw std::runtime_error("mixed states");
    seen->push_back({clock, since});
    if (seen->size() == 2) throw std::runtime_error("the disk is full");
    export_written done;
    done.version = seen->size();
    done.delta = since >= 0;
    return done;
  };
  auto summary = simulate(std::move(opts));
  REQUIRE_MESSAGE(summary, to_string(summary.error()));
  std::lock_guard<std::mutex> hold(*lock);
  const auto& v = *seen;
  REQUIRE(v.size() >= 5);
  CHECK(v[0].since == -1);
  CHECK(v[1].since == v[0].clock);  // failed
  CHECK(v[2].since == -1);          // so the next is full
  for (std::size_t i = 3; i < v.size(); ++i) {
    CAPTURE(i);
    CHECK(v[i].clock > v[i - 1].clock);
    // full, delta, delta, full, ... from the full one after the failure
    CHECK(v[i].since == ((i - 2) % 3 == 0 ? -1 : v[i - 1].clock));
  }
}

} // namespace actorps
