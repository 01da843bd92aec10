// TF_CONFIG as Kubeflow's TFJob operator writes it, unchanged: replica types in any case
// ("Worker", "PS", "Chief"), "master" for the chief, an "environment" key, and an evaluator left
// out of the cluster every replica gets (its own task is then evaluator:0).
#include "actors/deploy/cluster_spec.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace actorps;

namespace {

/// A TFJob-style TF_CONFIG: the cluster without the evaluator, `task` as given.
std::string tfjob_config(const std::string& chief_type, const std::string& task) {
  return R"({"cluster": {")" + chief_type + R"(": ["job-)" + chief_type
         + R"(-0.ns.svc:2222"], "ps": ["job-ps-0.ns.svc:2222"],
             "worker": ["job-worker-0.ns.svc:2222", "job-worker-1.ns.svc:2222"]},
             "task": )" + task + R"(, "environment": "cloud"})";
}

} // namespace

TEST_CASE("TF_CONFIG: an evaluator left out of the cluster is evaluator:0 outside it") {
  auto cfg = parse_tf_config(tfjob_config("chief", R"({"type": "evaluator", "index": 0})"),
                             "TF_CONFIG");
  REQUIRE(cfg.task);
  CHECK(cfg.task->text() == "evaluator:0");
  CHECK(cfg.cluster.count("evaluator") == 0);
  CHECK(!cfg.cluster.own_address(*cfg.task));  // it listens nowhere: nobody dials it
  // only one evaluator may stand outside; other tasks outside the cluster stay errors
  CHECK_THROWS_WITH_AS(
    parse_tf_config(tfjob_config("chief", R"({"type": "evaluator", "index": 1})"), "TF_CONFIG"),
    "TF_CONFIG: task evaluator:1 is outside the cluster: it has 0 evaluator task(s)",
    cluster_error);
  CHECK_THROWS_WITH_AS(
    parse_tf_config(tfjob_config("chief", R"({"type": "worker", "index": 2})"), "TF_CONFIG"),
    "TF_CONFIG: task worker:2 is outside the cluster: it has 2 worker task(s)", cluster_error);
}

TEST_CASE("TF_CONFIG: master is the chief, and replica types are read in any case") {
  auto cfg = parse_tf_config(tfjob_config("master", R"({"type": "master", "index": 0})"),
                             "TF_CONFIG");
  REQUIRE(cfg.task);
  CHECK(cfg.task->text() == "chief:0");
  CHECK(cfg.cluster.count("chief") == 1);
  CHECK(cfg.cluster.address({"chief", 0}).host == "job-master-0.ns.svc");

  auto upper = parse_tf_config(R"({"cluster": {"MASTER": ["m:1"], "PS": ["p:1"],
                                               "Worker": ["w:1"], "Evaluator": ["e:1"]},
                                   "task": {"type": "Evaluator", "index": 0}})",
                               "TF_CONFIG");
  CHECK(upper.task->text() == "evaluator:0");
  CHECK(upper.cluster.count("chief") == 1);
  CHECK(upper.cluster.count("ps") == 1);
  CHECK(upper.cluster.own_address(*upper.task)->text() == "e:1");
  CHECK(parse_tf_config(R"({"cluster": {"Chief": ["c:1"], "ps": ["p:1"], "worker": ["w:1"]},
                            "task": {"type": "PS", "index": 0}})", "TF_CONFIG")
          .task->text() == "ps:0");

  CHECK(parse_task("MASTER:0").text() == "chief:0");
  CHECK(parse_task("Worker:1").text() == "worker:1");
  CHECK(canonical_task_type("Chief") == "chief");
  // the same job twice under two names is refused, naming both
  CHECK_THROWS_WITH_AS(parse_tf_config(R"({"cluster": {"chief": ["c:1"], "master": ["m:1"],
                                                       "ps": ["p:1"], "worker": ["w:1"]}})",
                                       "TF_CONFIG"),
                       "TF_CONFIG: cluster.chief and cluster.master are the same job (chief): "
                       "give one",
                       cluster_error);
}

TEST_CASE("TF_CONFIG: the environment key TFJob adds is accepted and ignored") {
  auto cfg = parse_tf_config(tfjob_config("chief", R"({"type": "worker", "index": 1})"),
                             "TF_CONFIG");
  CHECK(cfg.task->text() == "worker:1");
  CHECK(cfg.cluster.count("worker") == 2);
}

TEST_CASE("TF_CONFIG's task alone, for --cluster FILE beside TF_CONFIG") {
  CHECK(parse_tf_config_task(R"({"task": {"type": "Worker", "index": 1}, "environment": "cloud"})",
                             "TF_CONFIG")
          ->text() == "worker:1");
  CHECK(!parse_tf_config_task(R"({"environment": "cloud"})", "TF_CONFIG"));
  CHECK_THROWS_WITH_AS(parse_tf_config_task(R"({"task": {"type": 3}})", "TF_CONFIG"),
                       "TF_CONFIG: \"task\" must be {\"type\": string, \"index\": integer}",
                       cluster_error);
}
