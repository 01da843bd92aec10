// One shard's sparse tables through its messages: pulls and snapshots by key, sync's mean of the
// workers' rows, a pull held until the clock's mean is in, admission, and every kind of bad push
// counted and dropped with the rows unchanged.
#include "tests/shard_fixture.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace actorps {

namespace {

using test::shard_fixture;
using test::timeout;

/// tiny_spec cut over two shards (the fixture serves shard 0) with one sparse table of rows of 2
/// floats, SGD with rate 1, zeros.
train_spec sparse_spec(consistency mode, int workers, uint32_t admit_after = 0) {
  auto spec = test::tiny_spec(mode, workers);
  spec.shards = 2;
  sparse_table_spec table;
  table.name = "emb";
  table.config.dim = 2;
  table.config.optimizer.kind = row_optimizer_kind::sgd;
  table.config.optimizer.learning_rate = 1.0f;
  table.config.admit_after = admit_after;
  spec.model.sparse_tables.push_back(table);
  place_buckets(spec);
  return spec;
}

/// The first `n` keys from 1 up that shard `shard` owns.
std::vector<uint64_t> keys_of(const train_spec& spec, int shard, std::size_t n) {
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; keys.size() < n; ++k)
    if (spec.shard_of_key(k) == shard) keys.push_back(k);
  return keys;
}

struct sparse_shard : shard_fixture {
  using shard_fixture::shard_fixture;

  /// A push for clock `clock` with the rows `grads` (2 per key) of `keys`, pulling `next`.
  wire_buffer push(int32_t worker, int64_t clock, const std::vector<uint64_t>& keys,
                   const std::vector<float>& grads, const std::vector<uint64_t>& next = {},
                   uint32_t table = 0) {
    std::vector<float> dense(layout.total_floats(), 0.0f);
    std::vector<sparse_rows_ref> rows, pull;
    // rows as wide as the gradient says, so that a test can send the wrong width
    auto dim = static_cast<uint32_t>(keys.empty() ? 2 : grads.size() / keys.size());
    if (!keys.empty()) rows.push_back({table, dim, keys.data(), nullptr, keys.size(), grads.data()});
    if (!next.empty()) pull.push_back({0, 2, next.data(), nullptr, next.size(), nullptr});
    return encode_push(worker, clock, 0, layout, dense.data(), 0, rows, pull);
  }

  /// The reply's rows of table 0 (2 floats per key asked), or the error.
  caf::expected<std::vector<float>> ask(const wire_buffer& request, bool is_push) {
    caf::expected<std::vector<float>> out{caf::none};
    auto take = [&](const wire_buffer& reply) {
      auto msg = decode_shard_parameters(reply);
      REQUIRE(msg);
      std::vector<float> rows;
      for (const auto& p : msg->sparse) rows.assign(p.values, p.values + p.value_count);
      out = rows;
    };
    auto fail = [&](caf::error& err) { out = std::move(err); };
    if (is_push)
      (*self)->request(shard, timeout, push_pull_atom::value, push_request{request}).receive(take, fail);
    else
      (*self)->request(shard, timeout, snapshot_atom::value, request).receive(take, fail);
    return out;
  }

  std::vector<float> rows(const std::vector<uint64_t>& keys) {
    std::vector<sparse_rows_ref> ask_keys{{0, 2, keys.data(), nullptr, keys.size(), nullptr}};
    auto got = ask(encode_pull(-1, 0, 0, ask_keys), false);
    REQUIRE(got);
    return *got;
  }
};

} // namespace

TEST_CASE("sync: the shard applies the mean of the workers' rows per key, once per clock") {
  sparse_shard s(sparse_spec(consistency::sync, 2));
  auto k = keys_of(s.spec, 0, 3);
  // worker 0 pushes keys a, b; worker 1 pushes b, c (in another order); both pull a, c next.
  (*s.self)->send(s.shard, push_pull_atom::value, push_request{s.push(0, 0, {k[0], k[1]}, {1, 2, 3, 4}, {k[0], k[2]})});
  bool answered = false;
  CHECK(s.stats().pulls_held == 1);  // held: worker 1 has not pushed clock 0
  CHECK((*s.self)->mailbox().empty());
  CHECK(s.rows({k[0]}) == std::vector<float>{0, 0});  // nothing applied yet
  auto reply1 = s.ask(s.push(1, 0, {k[2], k[1]}, {10, 20, 30, 40}, {k[0], k[2]}), true);
  REQUIRE(reply1);
  // mean over both workers, a key one worker did not push counting as zero from it; SGD rate 1
  CHECK(*reply1 == std::vector<float>{-0.5f, -1.0f, -5.0f, -10.0f});
  CHECK(s.rows({k[1]}) == std::vector<float>{-16.5f, -22.0f});  // (3 + 30) / 2, (4 + 40) / 2
  (*s.self)->receive([&](const wire_buffer& reply) {
    answered = true;
    auto msg = decode_shard_parameters(reply);
    REQUIRE(msg);
    REQUIRE(msg->sparse.size() == 1);
    CHECK(std::vector<float>(msg->sparse[0].values, msg->sparse[0].values + 4)
          == std::vector<float>{-0.5f, -1.0f, -5.0f, -10.0f});
  }, caf::after(timeout) >> [] {});
  CHECK(answered);
  auto stats = s.stats();
  REQUIRE(stats.table_rows.size() == 1);
  CHECK(stats.table_rows[0] == 3);
  CHECK(stats.table_bytes > 0);
}

TEST_CASE("a key nobody pushed reads as zeros and costs no row, and admission counts pushes first") {
  sparse_shard s(sparse_spec(consistency::async, 1, 2));
  auto k = keys_of(s.spec, 0, 2);
  CHECK(s.rows({k[0], k[1]}) == std::vector<float>{0, 0, 0, 0});
  CHECK(s.stats().table_rows[0] == 0);
  REQUIRE(s.ask(s.push(0, 0, {k[0]}, {1, 1}), true));
  CHECK(s.stats().table_rows[0] == 0);  // counted, not admitted: its gradient dropped
  CHECK(s.rows({k[0]}) == std::vector<float>{0, 0});
  REQUIRE(s.ask(s.push(0, 1, {k[0]}, {1, 2}), true));
  CHECK(s.stats().table_rows[0] == 1);  // the second push creates it and applies
  CHECK(s.rows({k[0]}) == std::vector<float>{-1, -2});
}

TEST_CASE("a shard drops bad sparse pushes and pulls, counts them and keeps its rows") {
  sparse_shard s(sparse_spec(consistency::async, 1));
  auto mine = keys_of(s.spec, 0, 2);
  auto theirs = keys_of(s.spec, 1, 1);
  REQUIRE(s.ask(s.push(0, 0, mine, {1, 1, 1, 1}), true));
  const auto before = s.rows(mine);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct bad_case {
    const char* what;
    wire_buffer push;
    errc expected;
  };
  std::vector<bad_case> cases = {
    {"unknown table", s.push(0, 1, mine, {1, 1, 1, 1}, {}, 1), errc::unknown_table},
    {"key of another shard", s.push(0, 1, {mine[0], theirs[0]}, {1, 1, 1, 1}), errc::key_not_owned},
    {"duplicate key", s.push(0, 1, {mine[0], mine[0]}, {1, 1, 1, 1}), errc::duplicate_key},
    {"width mismatch", s.push(0, 1, mine, {1, 1}), errc::wrong_element_count},
    {"non-finite row", s.push(0, 1, mine, {1, nan, 1, 1}), errc::non_finite_value},
    {"pull of a key of another shard", s.push(0, 1, mine, {1, 1, 1, 1}, {theirs[0]}),
     errc::key_not_owned},
  };
  uint64_t dropped = s.stats().dropped;
  for (auto& c : cases) {
    CAPTURE(std::string(c.what));
    auto got = s.ask(c.push, true);
    REQUIRE_FALSE(got);
    CHECK(got.error() == make_error(c.expected));
    CHECK(s.stats().dropped == ++dropped);
    CHECK(s.rows(mine) == before);
  }
  // a keyed snapshot of another shard's key is refused too
  std::vector<sparse_rows_ref> ask{{0, 2, theirs.data(), nullptr, 1, nullptr}};
  auto got = s.ask(encode_pull(-1, 0, 0, ask), false);
  REQUIRE_FALSE(got);
  CHECK(got.error() == make_error(errc::key_not_owned));
  // and the worker's clock did not move: clock 1 is still the one it may push
  CHECK(s.ask(s.push(0, 1, mine, {1, 1, 1, 1}), true));
}

TEST_CASE("an all-rows snapshot carries every row of the shard with its key, ascending") {
  sparse_shard s(sparse_spec(consistency::async, 1));
  auto k = keys_of(s.spec, 0, 3);
  // pushed out of order: the snapshot lists them by key
  REQUIRE(s.ask(s.push(0, 0, {k[2], k[0]}, {1, 2, 3, 4}), true));
  wire_buffer reply;
  (*s.self)->request(s.shard, timeout, snapshot_atom::value, encode_all_rows_pull(0))
    .receive([&](const wire_buffer& r) { reply = r; }, [](caf::error& err) { FAIL(describe(err)); });
  auto msg = decode_shard_parameters(reply);
  REQUIRE(msg);
  CHECK(msg->blocks.size() == s.layout.shard_blocks(0).size());
  REQUIRE(msg->sparse.size() == 1);
  const auto& rows = msg->sparse[0];
  CHECK(std::vector<uint64_t>(rows.keys, rows.keys + rows.key_count)
        == std::vector<uint64_t>{k[0], k[2]});
  CHECK(std::vector<float>(rows.values, rows.values + rows.value_count)
        == std::vector<float>{-3, -4, -1, -2});  // SGD rate 1 on zeros
  // all rows are for a snapshot only: a pull asking for them is dropped
  auto pull = encode_all_rows_pull(0);
  caf::error refused;
  (*s.self)->request(s.shard, timeout, pull_atom::value, pull)
    .receive([](const wire_buffer&) {}, [&](caf::error& err) { refused = std::move(err); });
  CHECK(refused);
}

} // namespace actorps
