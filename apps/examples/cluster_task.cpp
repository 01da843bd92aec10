// Example (c): a run the runtime owns, spread over processes by TF_CONFIG. The chief task trains
// an MLP on a seeded synthetic problem (each worker and the evaluator generate their own copy)
// and checks the test accuracy; every other task serves until the chief ends the run. Includes
// only the public header. apps/examples/cluster_task.sh starts a whole cluster on 127.0.0.1.
//
//   TF_CONFIG='{"cluster": {...}, "task": {"type": "worker", "index": 0}}' build/example_cluster_task
// Exit 0: the chief's run reached 0.9 test accuracy, or another task served to the run's end.
#include "actors/ps.hpp"

#include <cstdio>
#include <cstdlib>

int main() {
  using namespace actorps;
  const char* tf_config = std::getenv("TF_CONFIG");
  if (!tf_config) {
    std::fprintf(stderr, "example_cluster_task: set TF_CONFIG (this process's task)\n");
    return 2;
  }
  auto task = task_of(tf_config);
  if (!task) {
    std::fprintf(stderr, "example_cluster_task: %s\n", describe(task.error()).c_str());
    return 2;
  }
  if (task->type != "chief") {
    int status = serve_task(tf_config);
    // CAF 0.17 may wait forever for peers that have gone if the actor system were destroyed:
    // the task's work is done, so leave at once (ps.hpp, serve_task).
    std::fflush(nullptr);
    std::_Exit(status);
  }

  data_source data;
  data.what = data_source::kind::synthetic;
  data.cols = 64;
  train_options opts;  // ps and workers: the cluster's
  opts.model = "mlp:64-32-10";
  opts.mode = consistency::sync;
  opts.steps = 150;
  opts.batch = 32;
  auto summary = train_cluster(tf_config, opts, data);
  if (!summary) {
    std::fprintf(stderr, "the run failed: %s\n", describe(summary.error()).c_str());
    return 1;
  }
  std::printf("chief: %d workers, %d shards, %lld clocks, %lld samples, test accuracy %.4f\n",
              summary->workers, summary->shards, static_cast<long long>(summary->clocks),
              static_cast<long long>(summary->samples), summary->final_test_accuracy);
  return summary->final_test_accuracy >= 0.9 ? 0 : 1;
}
