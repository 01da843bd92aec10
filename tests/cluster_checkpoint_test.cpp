// local_cluster::checkpoint and restore: a loop of the user's own saves every shard's dense
// values, optimizer state and sparse rows (Adagrad state with them) in the run's checkpoint
// format, and a fresh cluster restored from it goes on exactly as the first did (sync).
#include "actors/ps.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <vector>

namespace actorps {

namespace {

model_spec kv_model(uint32_t dim = 3) {
  sparse_table_spec table;
  table.name = "kv";
  table.config.dim = dim;
  table.config.optimizer.kind = row_optimizer_kind::adagrad;
  table.config.optimizer.learning_rate = 0.5f;
  return {"kv", {{"w", {5}, tensor_init::uniform, 0.5f}}, {table}};
}

cluster_options sync_options() {
  cluster_options opts;
  opts.ps = 2;
  opts.workers = 1;
  opts.mode = consistency::sync;
  opts.optimizer = optimizer_config{optimizer_kind::momentum, 0.1f};
  opts.block_floats = 2;  // the dense tensor on both shards
  return opts;
}

const std::vector<uint64_t> keys = {3, 17, 40, 41, 99, 1000};

/// Clocks [from, from + clocks) of one worker: a gradient of each clock's own, then the rows
/// of every key and the dense values after them.
std::pair<std::vector<float>, std::vector<float>> train(local_cluster& ps, int64_t from,
                                                        int64_t clocks) {
  auto client = ps.worker(0);
  std::vector<float> params(ps.total_floats()), grad(ps.total_floats());
  std::vector<float> rows(keys.size() * 3), row_grads(keys.size() * 3);
  REQUIRE(client.wait(client.pull(from, params.data())));
  for (int64_t c = from; c < from + clocks; ++c) {
    for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = params[i] - float(c % 3);
    for (std::size_t i = 0; i < row_grads.size(); ++i) row_grads[i] = float((i + c) % 5) - 2;
    REQUIRE(client.wait(client.push_pull(c, grad.data(), params.data(),
                                          {{0, keys.data(), keys.size(), row_grads.data()}})));
  }
  REQUIRE(client.wait(client.pull(from + clocks, params.data(),
                                  {{0, keys.data(), keys.size(), rows.data()}})));
  return {params, rows};
}

} // namespace

TEST_CASE("local_cluster: checkpoint and restore carry dense values, optimizer state and "
          "sparse rows: a fresh cluster restored goes on bit for bit") {
  test::scratch_dir dir("actorps_cluster_checkpoint");
  const std::filesystem::path root = dir.path + "/ckpt";
  local_cluster first(kv_model(), sync_options());
  train(first, 0, 4);
  auto taken = first.checkpoint(root.string());
  REQUIRE(taken);
  CHECK(taken->clock == 4);
  CHECK(taken->dir == (root / "ckpt-000000000004").string());
  // the run's format: the manifest's checks pass, one file per shard
  auto loaded = load_checkpoint(taken->dir);
  CHECK(loaded.clock == 4);
  REQUIRE(loaded.shards.size() == 2);
  CHECK(taken->bytes == loaded.shards[0].size_bytes() + loaded.shards[1].size_bytes());
  const auto want = train(first, 4, 3);

  local_cluster second(kv_model(), sync_options());
  auto restored = second.restore(root.string());
  REQUIRE(restored);
  CHECK(*restored == 4);
  const auto got = train(second, 4, 3);
  CHECK(got.first == want.first);
  CHECK(got.second == want.second);
  // not the same without the restore: a fresh cluster's clocks 4..6 end elsewhere
  local_cluster third(kv_model(), sync_options());
  CHECK(train(third, 0, 3).second != want.second);

  // another table layout is refused, naming the table
  local_cluster other(kv_model(4), sync_options());
  auto refused = other.restore(root.string());
  REQUIRE_FALSE(refused);
  CHECK(describe(refused.error()).find("sparse table 0 is kv (dim 3") != std::string::npos);
}

} // namespace actorps
