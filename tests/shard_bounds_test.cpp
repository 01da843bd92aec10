// A shard's value bounds and checkpoint root through its messages: a push of 3e38 refused whole
// (a sync run with a stranger's pushes ends bit for bit as one without), an update that would
// overflow a parameter refused with every value unchanged, dense and sparse, and a checkpoint
// asked into a directory outside the shard's root refused with nothing written.
#include "actors/storage/checkpoint_root.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shard_fixture.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <vector>

namespace actorps {

namespace {

namespace fs = std::filesystem;
using test::shard_fixture;
using test::timeout;

/// Runs `clocks` sync clocks of two workers on a fresh shard, each worker pushing a gradient
/// that depends on the worker and the clock; with `stranger`, before every legitimate push a
/// stranger pushes 3e38 in that worker's name for the same clock. Returns the final values and
/// the stats.
std::pair<std::vector<float>, shard_stats> sync_run(bool stranger, int64_t clocks) {
  auto spec = test::tiny_spec(consistency::sync, 2);
  spec.optimizer.kind = optimizer_kind::momentum;
  spec.optimizer.learning_rate = 0.01f;
  shard_fixture f(spec);
  for (int64_t c = 0; c < clocks; ++c) {
    for (int32_t w = 0; w < 2; ++w) {
      if (stranger) {
        auto refused = f.push_pull(f.push_of(w, c, 3e38f));
        REQUIRE_FALSE(refused);
        CHECK(is_error(refused.error(), errc::value_out_of_bounds));
      }
      // worker 0 is answered once worker 1 has pushed the clock too (sync): send, not ask
      (*f.self)->send(f.shard, push_pull_atom::value,
                      push_request{f.push_of(w, c, 0.1f * float(w + 1) - 0.03f * float(c))});
    }
    for (int i = 0; i < 2; ++i)
      (*f.self)->receive([](const wire_buffer&) {}, [](caf::error& e) { FAIL(describe(e)); },
                         caf::after(timeout) >> [] { FAIL("no reply"); });
  }
  return {f.snapshot(), f.stats()};
}

} // namespace

TEST_CASE("a push of 3e38 is refused whole and a sync run ends bit for bit as without it") {
  auto [clean, clean_stats] = sync_run(false, 6);
  auto [attacked, attacked_stats] = sync_run(true, 6);
  CHECK(clean == attacked);
  CHECK(clean_stats.updates == 6);
  CHECK(attacked_stats.updates == 6);
  CHECK(attacked_stats.gradients_refused == 12);
  CHECK(attacked_stats.dropped == 12);
  CHECK(attacked_stats.pushes == 12);
  CHECK(clean_stats.gradients_refused == 0);
  // sampled from every 16th push accepted: here the first, worker 0's 0.1 at clock 0 (never a
  // refused one's 3e38)
  CHECK(attacked_stats.max_gradient == doctest::Approx(0.1f));
}

TEST_CASE("a gradient beyond a shard's configured --max-gradient is refused, one within it applies") {
  shard_config cfg;
  cfg.bounds.max_gradient = 10.0f;
  shard_fixture f(test::tiny_spec(consistency::async, 1), cfg);
  auto refused = f.push_pull(f.push_of(0, 0, 10.5f));
  REQUIRE_FALSE(refused);
  CHECK(is_error(refused.error(), errc::value_out_of_bounds));
  CHECK(f.snapshot() == f.initial);
  auto applied = f.push_pull(f.push_of(0, 0, 10.0f));  // the same clock: nothing was taken
  REQUIRE(applied);
  CHECK((*applied)[0] == f.initial[0] - 10.0f);
  auto stats = f.stats();
  CHECK(stats.gradients_refused == 1);
  CHECK(stats.pushes == 1);
}

TEST_CASE("an update that would overflow a parameter is refused with every value unchanged") {
  for (auto mode : {consistency::sync, consistency::async}) {
    CAPTURE(to_string(mode));
    auto spec = test::tiny_spec(mode, 1);
    spec.optimizer.kind = optimizer_kind::momentum;
    spec.optimizer.learning_rate = 3e38f;  // a finite rate whose product with g overflows
    spec.schedule = lr_schedule::constant;
    shard_fixture f(spec);
    // the gradient is well within --max-gradient; lr × g is not a float
    auto reply = f.push_pull(f.push_of(0, 0, 1000.0f));
    REQUIRE(reply);  // the push itself is valid and its clock counts
    CHECK(*reply == f.initial);
    auto stats = f.stats();
    CHECK(stats.updates_refused == 1);
    CHECK(stats.updates == 0);
    CHECK(stats.pushes == 1);
    CHECK(stats.min_clock == 1);
    // A zero gradient next: the refused update left momentum's velocity at 0, so this one
    // applies and changes nothing (a velocity of 1000 would have overflowed and been refused).
    auto next = f.push_pull(f.push_of(0, 1, 0.0f));
    REQUIRE(next);
    CHECK(*next == f.initial);
    CHECK(f.stats().updates == 1);
  }
}

TEST_CASE("a sparse row whose update would overflow keeps its values, a row of 3e38 is refused") {
  auto spec = test::tiny_spec(consistency::async, 1);
  spec.shards = 2;
  sparse_table_spec table;
  table.name = "emb";
  table.config.dim = 2;
  table.config.optimizer.kind = row_optimizer_kind::sgd;
  table.config.optimizer.learning_rate = 3e38f;
  spec.model.sparse_tables.push_back(table);
  place_buckets(spec);
  shard_fixture f(spec);
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; keys.size() < 2; ++k)
    if (spec.shard_of_key(k) == 0) keys.push_back(k);
  auto push = [&](int64_t clock, std::vector<float> rows) {
    std::vector<float> dense(f.layout.total_floats(), 0.0f);
    std::vector<sparse_rows_ref> parts{{0, 2, keys.data(), nullptr, keys.size(), rows.data()}};
    return encode_push(0, clock, 0, f.layout, dense.data(), 0, parts);
  };
  auto rows = [&] {
    std::vector<float> out;
    std::vector<sparse_rows_ref> ask{{0, 2, keys.data(), nullptr, keys.size(), nullptr}};
    (*f.self)->request(f.shard, timeout, snapshot_atom::value, encode_pull(-1, 0, 0, ask))
      .receive([&](const wire_buffer& reply) {
                 auto msg = decode_shard_parameters(reply);
                 REQUIRE(msg);
                 out.assign(msg->sparse[0].values, msg->sparse[0].values + 4);
               },
               [&](caf::error& e) { FAIL(describe(e)); });
    return out;
  };
  auto refused = f.push_pull(push(0, {1.0f, 1.0f, 3e38f, 0.0f}));
  REQUIRE_FALSE(refused);
  CHECK(is_error(refused.error(), errc::value_out_of_bounds));
  CHECK(f.stats().gradients_refused == 1);
  // key 0's row would become −3e38, far beyond --max-parameter; key 1's (zero) applies
  REQUIRE(f.push_pull(push(0, {1.0f, 0.0f, 0.0f, 0.0f})));
  CHECK(rows() == std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f});
  auto stats = f.stats();
  CHECK(stats.updates_refused == 1);  // one row
  CHECK(stats.updates == 1);          // the dense update went in
  CHECK(stats.table_rows == std::vector<uint64_t>{2});
}

TEST_CASE("checkpoint roots: only the root and what lies under it, after .. and symlinks") {
  test::scratch_dir dir;
  auto root = dir.path + "/root";
  fs::create_directories(root + "/ckpt-1");
  fs::create_directories(dir.path + "/outside");
  fs::create_directories(dir.path + "/root2");
  fs::create_directory_symlink(dir.path + "/outside", root + "/escape");
  CHECK(outside_checkpoint_root(root, root).empty());
  CHECK(outside_checkpoint_root(root, root + "/ckpt-1").empty());
  CHECK(outside_checkpoint_root(root, root + "/ckpt-2/").empty());       // not there yet
  CHECK(outside_checkpoint_root(root + "/", root + "/ckpt-1").empty());  // a trailing slash
  CHECK(outside_checkpoint_root(root, root + "/x/../ckpt-1").empty());
  CHECK_FALSE(outside_checkpoint_root(root, dir.path + "/outside").empty());
  CHECK_FALSE(outside_checkpoint_root(root, root + "/../outside").empty());
  CHECK_FALSE(outside_checkpoint_root(root, root + "/nothing/../../outside").empty());
  CHECK_FALSE(outside_checkpoint_root(root, root + "/escape").empty());
  CHECK_FALSE(outside_checkpoint_root(root, root + "/escape/ckpt-1").empty());
  CHECK_FALSE(outside_checkpoint_root(root, dir.path + "/root2").empty());  // a prefix, not under
  CHECK_FALSE(outside_checkpoint_root(root, "/").empty());
  CHECK_FALSE(outside_checkpoint_root("", root).empty());  // no root: nothing is under it
}

TEST_CASE("a checkpoint asked outside the shard's root is refused and counted, nothing written") {
  test::scratch_dir dir;
  auto root = dir.path + "/ckpts";
  fs::create_directories(root + "/ckpt-1");
  auto spec = test::tiny_spec(consistency::async, 1);
  spec.checkpoint_every = 1;
  spec.total_clocks = 4;
  shard_fixture f(spec, shard_config{root, {}});
  REQUIRE(f.push_pull(f.push_of(0, 0, 1.0f)));  // min clock 1: a checkpoint clock's snapshot
  auto ask = [&](const std::string& where) {
    caf::expected<file_record> out{caf::none};
    (*f.self)->request(f.shard, timeout, checkpoint_atom::value, where, int64_t{1})
      .receive([&](file_record& r) { out = std::move(r); },
               [&](caf::error& e) { out = std::move(e); });
    return out;
  };
  for (auto bad : {dir.path + "/stranger", root + "/../stranger", std::string("/tmp")}) {
    CAPTURE(bad);
    auto refused = ask(bad);
    REQUIRE_FALSE(refused);
    CHECK(is_error(refused.error(), errc::outside_checkpoint_root));
  }
  CHECK_FALSE(fs::exists(dir.path + "/stranger"));
  CHECK_FALSE(fs::exists("/tmp/shard-0.capnp"));
  auto stats = f.stats();
  CHECK(stats.checkpoints_refused == 3);
  auto written = ask(root + "/ckpt-1");  // the shard still writes under its root
  REQUIRE(written);
  CHECK(fs::exists(root + "/ckpt-1/shard-0.capnp"));
}

} // namespace actorps
