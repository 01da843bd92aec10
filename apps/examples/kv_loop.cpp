// Example (b): a hand-written loop in the shape of ps-lite's test_kv_app.cc. W workers, each on
// its own thread, push known gradients with push_pull for K clocks in sync mode; the shards
// average them and apply SGD. Every worker checks every pull it gets, and the final parameters
// must be exactly the expected ones. Includes only the public header.
//
//   build/example_kv_loop      exit 0 when every value is exact
#include "actors/ps.hpp"

#include <cstdio>
#include <thread>
#include <vector>

int main() {
  using namespace actorps;
  constexpr int workers = 4, shards = 3, clocks = 10;
  constexpr float lr = 0.5f;
  // Worker w pushes grads[w] for every value: their mean is 3, so each clock moves every value
  // by -lr · 3 = -1.5, exactly representable: after c clocks each value is exactly -1.5 · c.
  const float grads[workers] = {1, 2, 3, 6};

  model_spec model{"kv:example", {{"w", {1000}, tensor_init::zeros, 0},
                                  {"b", {7, 3}, tensor_init::zeros, 0}}};
  cluster_options opts;
  opts.ps = shards;
  opts.workers = workers;
  opts.mode = consistency::sync;
  opts.optimizer.kind = optimizer_kind::sgd;
  opts.optimizer.learning_rate = lr;
  local_cluster ps(model, opts);

  std::vector<int> wrong(workers, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      auto client = ps.worker(w);
      std::vector<float> params(ps.total_floats()), grad(ps.total_floats(), grads[w]);
      if (!client.wait(client.pull(0, params.data()))) ++wrong[w];
      for (int c = 0; c < clocks; ++c) {
        auto staleness = client.wait(client.push_pull(c, grad.data(), params.data()));
        if (!staleness || *staleness != 0) {  // sync: never stale
          std::fprintf(stderr, "worker %d clock %d: %s\n", w, c,
                       staleness ? "stale parameters" : describe(staleness.error()).c_str());
          ++wrong[w];
          return;
        }
        for (float v : params) wrong[w] += v != -1.5f * float(c + 1);  // after clock c's update
      }
    });
  for (auto& t : threads) t.join();

  auto final = ps.snapshot();
  int bad = 0;
  for (int w = 0; w < workers; ++w) bad += wrong[w];
  if (!final) {
    std::fprintf(stderr, "snapshot failed: %s\n", describe(final.error()).c_str());
    return 1;
  }
  for (float v : *final) bad += v != -1.5f * clocks;
  std::printf("%d workers x %d clocks on %d shards: %zu values, %d wrong (expected %.1f each)\n",
              workers, clocks, shards, final->size(), bad, -1.5 * clocks);
  return bad == 0 ? 0 : 1;
}
