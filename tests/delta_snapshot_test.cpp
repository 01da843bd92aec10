// A delta checkpoint costs the shard what changed: told by the chief's commit that the next
// checkpoint holds the changes since that clock, a shard keeps at the next checkpoint clock only
// the sparse rows pushed since (not its whole table, cut later). It keeps the whole state while
// the chief has not said, while a checkpoint it asked is not committed (its outcome decides the
// next one's kind) or one kept earlier may be asked first, and when the chief says the next one
// is full. Asked for what it did not keep, it takes the whole state when it is still that
// clock's, and refuses otherwise.
#include "tests/two_shard_table.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace actorps {

namespace {

using test::timeout;

/// One worker in sync mode over two shards (the fixture serves shard 0), a checkpoint clock
/// every 2, one sparse table of rows of 2 floats, SGD with rate 1.
train_spec snapshot_spec() {
  auto spec = test::two_shard_table_spec();
  spec.checkpoint_every = 2;
  spec.total_clocks = 100;
  return spec;
}

/// The first `n` keys from `from` up that shard 0 owns.
std::vector<uint64_t> own_keys(const train_spec& spec, std::size_t n, uint64_t from) {
  return test::keys_of(spec, 0, n, from);
}

struct snapshot_shard : test::shard_fixture {
  using shard_fixture::shard_fixture;

  /// Pushes clock `clock` with a gradient of 0.5 for each of `keys` and waits for the answer.
  void push(int64_t clock, const std::vector<uint64_t>& keys = {}) {
    std::vector<float> dense(layout.total_floats(), 0.0f), grads(keys.size() * 2, 0.5f);
    std::vector<sparse_rows_ref> rows;
    if (!keys.empty()) rows.push_back({0, 2, keys.data(), nullptr, keys.size(), grads.data()});
    REQUIRE(push_pull(encode_push(0, clock, 0, layout, dense.data(), 0, rows, {})));
  }

  /// The checkpoint file of `clock` asked since `since`: (delta_since, rows), or the error.
  caf::expected<std::pair<int64_t, std::size_t>> checkpoint(int64_t clock, int64_t since) {
    auto bytes = ask(shard, checkpoint_atom::value, clock, since);
    if (!bytes) return bytes.error();
    auto view = decode_shard_checkpoint(*bytes);
    if (!view) return view.error();
    return std::pair{view->delta_since, view->sparse.at(0).keys.size()};
  }

  void commit(int64_t clock, int64_t next_since) {
    (*self)->send(shard, checkpoint_atom::value, commit_atom::value, clock, next_since);
  }
};

} // namespace

TEST_CASE("a shard keeps at a delta checkpoint's clock only the rows changed since") {
  const auto spec = snapshot_spec();
  snapshot_shard f(spec);
  const auto table = own_keys(spec, 2000, 1);
  const std::vector<uint64_t> some(table.begin(), table.begin() + 10);

  // Nothing said yet: the state at clock 2 is kept whole.
  f.push(0, table);
  f.push(1);
  auto first = f.checkpoint(2, -1);
  REQUIRE_MESSAGE(first, describe(first.error()));
  CHECK(*first == std::pair<int64_t, std::size_t>{-1, 2000});

  // Committed, the next one a delta since 2: at clock 4 the shard keeps the 10 rows pushed
  // since. Once it is past clock 4 a request for the whole state at 4 cannot be answered (the
  // old shard cut a delta from its whole snapshot and would have answered it: 2 000 rows).
  f.commit(2, 2);
  f.push(2, some);
  f.push(3);
  f.push(4);
  auto whole_at_4 = f.checkpoint(4, -1);
  REQUIRE_FALSE(whole_at_4);
  CHECK(is_error(whole_at_4.error(), errc::checkpoint_failed));
  CHECK(describe(whole_at_4.error()).find("holds the changes since clock 2") != std::string::npos);
  // What the chief said it would ask is there; a delta since a later clock gets the same rows
  // (a superset of its changes), and its file says since when.
  CHECK(*f.checkpoint(4, 2) == std::pair<int64_t, std::size_t>{2, 10});
  CHECK(*f.checkpoint(4, 3) == std::pair<int64_t, std::size_t>{2, 10});

  // A checkpoint asked (4) and not committed: its outcome decides what the next one holds,
  // so the state at the next clock is kept whole.
  f.push(5);
  f.push(6);
  CHECK(*f.checkpoint(6, -1) == std::pair<int64_t, std::size_t>{-1, 2000});

  // Committed, the next a delta since 6: the state at 8 holds the 10 rows pushed at 7. The
  // checkpoint at 8 is asked and not committed when the shard reaches 10: whole at 10.
  f.commit(6, 6);
  f.push(7, some);
  CHECK(*f.checkpoint(8, 6) == std::pair<int64_t, std::size_t>{6, 10});
  f.push(8);
  f.push(9);
  f.push(10);
  CHECK(*f.checkpoint(10, -1) == std::pair<int64_t, std::size_t>{-1, 2000});

  // A full one said next (--full-checkpoint-every): whole at 12.
  f.commit(10, -1);
  f.push(11, some);
  f.push(12);
  CHECK(*f.checkpoint(12, -1) == std::pair<int64_t, std::size_t>{-1, 2000});

  // Kept as a delta since 12 at 14, then asked whole while the shard is still at 14 exactly:
  // the whole state now is 14's, kept then; a delta is cut from it as before.
  f.commit(12, 12);
  f.push(13, some);
  CHECK(*f.checkpoint(14, -1) == std::pair<int64_t, std::size_t>{-1, 2000});
  CHECK(*f.checkpoint(14, 12) == std::pair<int64_t, std::size_t>{12, 10});

  // The chief lags: the shard passes two checkpoint clocks after a commit before it asks. The
  // plan is for the first (16); the second (18) may follow a delta or a full one: whole.
  f.commit(14, 14);
  f.push(14, some);
  f.push(15);
  f.push(16);
  f.push(17);
  f.push(18);
  CHECK(*f.checkpoint(16, 14) == std::pair<int64_t, std::size_t>{14, 10});
  CHECK(*f.checkpoint(18, -1) == std::pair<int64_t, std::size_t>{-1, 2000});
}

} // namespace actorps
