// The front door's worker_client with sparse tables: keys split between two shards, rows put
// back in the caller's order, sync's per-key mean, and keys named twice in a call.
#include "actors/ps.hpp"

#include <caf/sec.hpp>  // the timeout and argument errors compared with
#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace actorps {

namespace {

model_spec kv_model() {
  sparse_table_spec table;
  table.name = "kv";
  table.config.dim = 2;
  table.config.optimizer.kind = row_optimizer_kind::sgd;
  table.config.optimizer.learning_rate = 1.0f;
  return {"kv", {{"bias", {1}, tensor_init::zeros, 0}}, {table}};
}

} // namespace

TEST_CASE("worker_client pulls and pushes sparse rows by key across shards") {
  cluster_options opts;
  opts.ps = 2;
  opts.workers = 2;
  opts.mode = consistency::sync;
  opts.optimizer = optimizer_config{optimizer_kind::sgd, 1.0f};
  local_cluster ps(kv_model(), opts);
  // keys 1..20 fall on both shards; the caller's order is not the shards'
  std::vector<uint64_t> keys;
  for (uint64_t k = 20; k >= 1; --k) keys.push_back(k);
  const auto n = keys.size();
  auto run_worker = [&](int w, std::vector<float>& after) {
    auto client = ps.worker(w);
    float bias = 0, bias_grad = 0;
    std::vector<float> rows(2 * n, -1.0f), grads(2 * n);
    auto t = client.pull(0, &bias, {{0, keys.data(), n, rows.data()}});
    REQUIRE(client.wait(t));
    for (auto v : rows) CHECK(v == 0.0f);  // zeros, never pushed
    for (std::size_t i = 0; i < n; ++i) {  // worker w pushes (w + 1) · key for each value
      grads[2 * i] = float((w + 1) * keys[i]);
      grads[2 * i + 1] = -float((w + 1) * keys[i]);
    }
    after.assign(2 * n, 0.0f);
    t = client.push_pull(0, &bias_grad, &bias, {{0, keys.data(), n, grads.data()}},
                         {{0, keys.data(), n, after.data()}});
    REQUIRE(client.wait(t));  // sync: answered once both workers pushed clock 0
  };
  std::vector<float> a, b;
  std::thread other([&] { run_worker(1, b); });
  run_worker(0, a);
  other.join();
  for (std::size_t i = 0; i < n; ++i) {  // SGD rate 1 on the mean (1 + 2)/2 · key
    CHECK(a[2 * i] == -1.5f * float(keys[i]));
    CHECK(a[2 * i + 1] == 1.5f * float(keys[i]));
  }
  CHECK(a == b);
}

TEST_CASE("worker_client: a key pushed twice pushes the sum of its rows, a key pulled twice "
          "gets its row twice, a table the model lacks is refused") {
  cluster_options opts;
  opts.ps = 2;
  opts.mode = consistency::async;
  // SGD at rate 1: a row is minus the gradients applied to it, so one row pushed with the sum
  // of the two reads the same as the sum of each applied in turn, while the key's row pushed
  // once (the other dropped) or refused would not.
  local_cluster ps(kv_model(), opts);
  auto client = ps.worker(0);
  float bias = 0, bias_grad = 0;
  std::vector<uint64_t> keys = {7, 9, 7};
  std::vector<float> grads = {1, 2, 10, 20, 100, 200};
  auto t = client.push_pull(0, &bias_grad, &bias, {{0, keys.data(), 3, grads.data()}});
  REQUIRE(client.wait(t));
  std::vector<float> rows(6, 0.0f);
  t = client.pull(1, &bias, {{0, keys.data(), 3, rows.data()}});
  REQUIRE(client.wait(t));
  CHECK(rows == std::vector<float>{-101, -202, -10, -20, -101, -202});
  // a table the model does not have is refused by the client itself
  keys = {7};
  auto wrong = client.pull(0, &bias, {{3, keys.data(), 1, grads.data()}});
  auto refused = client.wait(wrong);
  REQUIRE_FALSE(refused);
  CHECK(refused.error() == make_error(errc::unknown_table));
}

TEST_CASE("worker_client: a shard that holds a reply past the timeout fails the call, naming "
          "the shard") {
  cluster_options opts;
  opts.ps = 2;
  opts.workers = 2;  // worker 1 never pushes: sync holds worker 0's clock 1
  opts.mode = consistency::sync;
  opts.timeout = std::chrono::milliseconds(200);
  local_cluster ps(kv_model(), opts);
  auto client = ps.worker(0);
  float bias = 0, bias_grad = 0;
  auto started = std::chrono::steady_clock::now();
  auto t = client.push_pull(0, &bias_grad, &bias);
  auto got = client.wait(t);
  auto waited = std::chrono::steady_clock::now() - started;
  REQUIRE_FALSE(got);
  CHECK(got.error() == caf::sec::request_timeout);
  CHECK(describe(got.error()).find("shard 0 did not answer worker:0's push_pull for the "
                                   "parameters of clock 1 within 200 ms")
        != std::string::npos);
  CHECK(waited >= std::chrono::milliseconds(200));
  // and the client goes on: a pull of clock 0 is answered
  t = client.pull(0, &bias);
  CHECK(client.wait(t));
}

TEST_CASE("worker_client: in sync, a worker that runs fewer clocks and finishes lets the "
          "others go on") {
  cluster_options opts;
  opts.ps = 2;
  opts.workers = 2;
  opts.mode = consistency::sync;
  opts.optimizer = optimizer_config{optimizer_kind::sgd, 1.0f};
  opts.timeout = std::chrono::seconds(20);  // (without finish, clock 2 would wait this long)
  local_cluster ps(kv_model(), opts);
  auto run = [&](int w, int clocks, float& bias) {
    auto client = ps.worker(w);
    float grad = float(w + 1);  // worker w pushes w + 1 at every clock
    REQUIRE(client.wait(client.pull(0, &bias)));
    for (int c = 0; c < clocks; ++c) REQUIRE(client.wait(client.push_pull(c, &grad, &bias)));
    CHECK_FALSE(client.finish());
    CHECK_FALSE(client.finish());  // again: nothing
    auto after = client.pull(clocks, &bias);
    auto refused = client.wait(after);
    REQUIRE_FALSE(refused);
    CHECK(describe(refused.error()).find("has finished") != std::string::npos);
  };
  float bias0 = 0, bias1 = 0;
  auto started = std::chrono::steady_clock::now();
  std::thread other([&] { run(1, 2, bias1); });
  run(0, 4, bias0);
  other.join();
  // clocks 0 and 1: the mean of 1 and 2; clocks 2 and 3: worker 0's 1 alone
  CHECK(bias0 == -(1.5f + 1.5f + 1.0f + 1.0f));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
}

TEST_CASE("worker_client: finish with a ticket not waited yet is refused") {
  cluster_options opts;
  opts.ps = 1;
  local_cluster ps(kv_model(), opts);
  auto client = ps.worker(0);
  float bias = 0;
  auto t = client.pull(0, &bias);
  auto err = client.finish();
  CHECK(err == caf::sec::invalid_argument);
  CHECK(describe(err).find("1 ticket(s) not waited yet") != std::string::npos);
  CHECK(client.wait(t));
  CHECK_FALSE(client.finish());
}

TEST_CASE("worker_client: calls in flight together each get their own shards' replies") {
  // The next clock's push_pull sent before the last one is waited for (the user overlapping
  // compute with the wire, into a second buffer): each ticket's rows and values are its own.
  cluster_options opts;
  opts.ps = 2;
  opts.mode = consistency::async;
  opts.optimizer = optimizer_config{optimizer_kind::sgd, 1.0f};
  local_cluster ps(kv_model(), opts);
  auto client = ps.worker(0);
  float a = 0, b = 0, grad = 1;
  std::vector<uint64_t> keys = {3, 4, 5, 6};  // on both shards
  std::vector<float> g(8, 1.0f), rows_a(8, -9.0f), rows_b(8, -9.0f);
  REQUIRE(client.wait(client.pull(0, &a)));
  auto t0 = client.push_pull(0, &grad, &a, {{0, keys.data(), 4, g.data()}},
                             {{0, keys.data(), 4, rows_a.data()}});
  auto t1 = client.push_pull(1, &grad, &b, {{0, keys.data(), 4, g.data()}},
                             {{0, keys.data(), 4, rows_b.data()}});
  REQUIRE(client.wait(t1));  // waited in the other order
  REQUIRE(client.wait(t0));
  CHECK(a == -1.0f);  // after clock 0's push
  CHECK(b == -2.0f);  // after both
  for (int i = 0; i < 8; ++i) {
    CHECK(rows_a[i] == -1.0f);
    CHECK(rows_b[i] == -2.0f);
  }
}

} // namespace actorps
