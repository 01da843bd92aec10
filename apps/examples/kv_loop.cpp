// Example (b): a hand-written loop in the shape of ps-lite's test_kv_app.cc. W workers push
// known gradients with push_pull for K clocks in sync mode; the shards average them and apply
// SGD. Every worker checks every pull, so the final parameters must be exactly the expected
// ones. Includes only the public header.
//
//   build/example_kv_loop     all in this process (4 workers on threads, 3 shards)
//   TF_CONFIG='{"cluster": {"ps": [...], "worker": [...]}, "task": {"type": "ps", "index": 0}}'
//   build/example_kv_loop     with that exported: this process is that one task
//                             (apps/examples/kv_loop_tasks.sh starts a whole cluster)
// Exit 0 when every value is exact.
#include "actors/ps.hpp"

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using namespace actorps;

constexpr int clocks = 10;
constexpr float lr = 0.5f;

// Worker w of W pushes 3 + 2w - (W - 1) for every value: the mean is 3, so each clock moves
// every value by -lr · 3 = -1.5, exactly representable: after c clocks each is exactly -1.5 · c.
float gradient_of(int w, int workers) { return float(3 + 2 * w - (workers - 1)); }

/// One worker's loop; returns how many values (or calls) were wrong.
int run_worker(worker_client client, std::size_t floats, int w, int workers) {
  std::vector<float> params(floats), grad(floats, gradient_of(w, workers));
  if (!client.wait(client.pull(0, params.data()))) return 1;
  int wrong = 0;
  for (int c = 0; c < clocks; ++c) {
    auto staleness = client.wait(client.push_pull(c, grad.data(), params.data()));
    if (!staleness || *staleness != 0) {  // sync: never stale
      std::fprintf(stderr, "worker %d clock %d: %s\n", w, c,
                   staleness ? "stale parameters" : describe(staleness.error()).c_str());
      return wrong + 1;
    }
    for (float v : params) wrong += v != -1.5f * float(c + 1);  // after clock c's update
  }
  return wrong;
}

/// This process is one task of the cluster in TF_CONFIG.
int run_task(const char* tf_config, const model_spec& model, const cluster_options& opts) {
  task_cluster task(tf_config, model, opts);
  if (task.is_ps()) return task.serve();
  auto client = task.worker();
  if (!client) {
    std::fprintf(stderr, "worker %d: %s\n", task.index(), describe(client.error()).c_str());
    return 1;
  }
  int wrong = run_worker(*client, task.total_floats(), task.index(), task.workers());
  auto err = task.finish();
  std::printf("worker %d: %d clocks, %zu values, %d wrong\n", task.index(), clocks,
              task.total_floats(), wrong);
  return wrong == 0 && !err ? 0 : 1;
}

} // namespace

int main() {
  model_spec model{"kv:example", {{"w", {1000}, tensor_init::zeros, 0},
                                  {"b", {7, 3}, tensor_init::zeros, 0}}};
  cluster_options opts;
  opts.ps = 3;
  opts.workers = 4;
  opts.mode = consistency::sync;
  opts.optimizer = optimizer_config{optimizer_kind::sgd, lr};

  if (const char* tf_config = std::getenv("TF_CONFIG")) {
    int status = run_task(tf_config, model, opts);
    // CAF 0.17 may wait forever in ~actor_system for peers that have already exited: the work
    // is done, so leave at once (ps.hpp, task_cluster).
    std::fflush(nullptr);
    std::_Exit(status);
  }

  local_cluster ps(model, opts);
  std::vector<int> wrong(opts.workers, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < opts.workers; ++w)
    threads.emplace_back([&, w] { wrong[w] = run_worker(ps.worker(w), ps.total_floats(), w, opts.workers); });
  for (auto& t : threads) t.join();

  auto final = ps.snapshot();
  if (!final) {
    std::fprintf(stderr, "snapshot failed: %s\n", describe(final.error()).c_str());
    return 1;
  }
  int bad = 0;
  for (int w = 0; w < opts.workers; ++w) bad += wrong[w];
  for (float v : *final) bad += v != -1.5f * clocks;
  std::printf("%d workers x %d clocks on %d shards: %zu values, %d wrong (expected %.1f each)\n",
              opts.workers, clocks, opts.ps, final->size(), bad, -1.5 * clocks);
  return bad == 0 ? 0 : 1;
}
