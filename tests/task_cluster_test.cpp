// A loop of the user's own as one process per task (ps.hpp's task_cluster): which TF_CONFIGs it
// accepts, and that a worker task's errors come back as values. The whole cluster running is
// example_kv_loop_tasks (apps/examples/kv_loop_tasks.sh).
#include "actors/deploy/cluster_spec.hpp"
#include "actors/ps.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

using namespace actorps;

namespace {

std::string config_text(const std::string& cluster, const std::string& task) {
  return "{\"cluster\": " + cluster + (task.empty() ? "" : ", \"task\": " + task) + "}";
}

model_spec tiny_model() { return {"kv:test", {{"w", {10}, tensor_init::zeros, 0}}}; }

std::string refusal(const std::string& config) {
  try {
    task_cluster task(config, tiny_model(), {});
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("a user loop's cluster has ps and worker tasks only, and names this process's task") {
  const std::string ps_workers = R"({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]})";
  CHECK_NOTHROW(parse_tf_config(config_text(ps_workers, ""), "TF_CONFIG", loop_owner::user));
  CHECK_THROWS_WITH_AS(parse_tf_config(config_text(ps_workers, ""), "TF_CONFIG"),
                       "TF_CONFIG: the cluster needs exactly one chief", cluster_error);
  const std::string with_chief =
    R"({"chief": ["127.0.0.1:4"], "ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]})";
  CHECK(refusal(config_text(with_chief, R"({"type": "ps", "index": 0})")).find("ps and worker tasks only")
        != std::string::npos);
  CHECK(refusal(config_text(ps_workers, "")) == "TF_CONFIG: no \"task\": which task is this process?");
  CHECK(refusal(config_text(ps_workers, R"({"type": "worker", "index": 2})"))
        == "TF_CONFIG: task worker:2 is outside the cluster: it has 2 worker task(s)");
  CHECK(refusal("{not json").find("TF_CONFIG: malformed JSON") == 0);

  task_cluster worker(config_text(ps_workers, R"({"type": "worker", "index": 1})"), tiny_model(), {});
  CHECK(!worker.is_ps());
  CHECK(worker.index() == 1);
  CHECK(worker.workers() == 2);  // from the cluster, not the options
  CHECK(worker.total_floats() == 10);
  CHECK_THROWS_AS(worker.serve(), std::logic_error);
  auto unconnected = worker.scale(1);
  REQUIRE(!unconnected);
  CHECK(describe(unconnected.error()).find("call worker() first") != std::string::npos);

  // the shards from the start: the first N ps tasks, no more than TF_CONFIG lists
  CHECK_THROWS_WITH_AS(task_cluster(config_text(ps_workers, R"({"type": "worker", "index": 0})"),
                                    tiny_model(), {}, 2),
                       "shards: 1 to the 1 ps task(s) TF_CONFIG lists, or 0 for all (got 2)",
                       std::invalid_argument);
  task_cluster ps(config_text(ps_workers, R"({"type": "ps", "index": 0})"), tiny_model(), {}, 1);
  CHECK_THROWS_AS(ps.scale(1), std::logic_error);
}

TEST_CASE("a worker task whose ps task never listens gets the error naming the address") {
  cluster_options opts;
  opts.timeout = std::chrono::milliseconds(300);
  task_cluster worker(config_text(R"({"ps": ["127.0.0.1:9"], "worker": ["127.0.0.1:2"]})",
                                R"({"type": "worker", "index": 0})"), tiny_model(), opts);
  auto client = worker.worker();
  REQUIRE(!client);
  CHECK(describe(client.error()).find("127.0.0.1:9") != std::string::npos);
  CHECK(!worker.snapshot());  // never connected
}
