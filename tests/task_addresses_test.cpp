// A task's addresses as a Kubernetes cluster gives them: its own host name may resolve only some
// seconds after it starts (retried with backoff up to a deadline), and a ps task's data link
// listens on a fixed port derived from the task's own (refused when it is another task's).
#include "actors/deploy/data_port.hpp"
#include "actors/guard/await_name.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using namespace actorps;
using namespace std::chrono_literals;

TEST_CASE("a ps task's data port is its port + 1, or --data-port, never another task's") {
  auto cfg = parse_tf_config(R"({"cluster": {"chief": ["c:2222"], "ps": ["p0:2222", "p1:2222"],
                                             "worker": ["w0:2222"]}})", "spec");
  CHECK(data_port_of(cfg.cluster, {"ps", 0}, 0) == 2223);
  CHECK(data_port_of(cfg.cluster, {"ps", 1}, 7000) == 7000);
  // one host, consecutive ports: ps:0's port + 1 is ps:1's address
  auto local = parse_tf_config(R"({"cluster": {"chief": ["h:2220"], "ps": ["h:2222", "h:2223"],
                                               "worker": ["h:2225"]}})", "spec");
  CHECK_THROWS_WITH_AS(data_port_of(local.cluster, {"ps", 0}, 0),
                       "the data port of ps:0 (its port + 1), 2223, is the address of ps:1 in "
                       "the cluster (h:2223): give ps:0 another --data-port",
                       cluster_error);
  CHECK(data_port_of(local.cluster, {"ps", 1}, 0) == 2224);
  CHECK_THROWS_WITH_AS(data_port_of(local.cluster, {"ps", 1}, 2225),
                       "--data-port 2225, is the address of worker:0 in the cluster (h:2225): "
                       "give ps:1 another --data-port",
                       cluster_error);
  CHECK_THROWS_AS(data_port_of(local.cluster, {"ps", 1}, 2223), cluster_error);  // its own
  auto top = parse_tf_config(R"({"cluster": {"chief": ["c:1"], "ps": ["p:65535"],
                                             "worker": ["w:1"]}})", "spec");
  CHECK_THROWS_WITH_AS(data_port_of(top.cluster, {"ps", 0}, 0),
                       "the data port of ps:0 (its port + 1), 65536, is past 65535: give "
                       "--data-port",
                       cluster_error);
}

TEST_CASE("a host name that resolves late is retried with backoff until it does") {
  int lookups = 0, told = 0;
  auto late = [&](const std::string& host) -> std::string {
    CHECK(host == "job-ps-0.ns.svc");
    return ++lookups < 4 ? "Name or service not known" : "";
  };
  auto started = std::chrono::steady_clock::now();
  auto why = await_name("job-ps-0.ns.svc", 10s, [&](const std::string&) { ++told; }, late);
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(why.empty());
  CHECK(lookups == 4);
  CHECK(told == 1);          // logged once, not per attempt
  CHECK(took >= 350ms);      // 50 + 100 + 200 ms of backoff: no busy loop
  CHECK(took < 5s);
}

TEST_CASE("a host name that never resolves gives up at the deadline, naming it") {
  int lookups = 0;
  auto never = [&](const std::string&) -> std::string {
    ++lookups;
    return "Name or service not known";
  };
  auto started = std::chrono::steady_clock::now();
  auto why = await_name("job-ps-0.ns.svc", 300ms, {}, never);
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(why.find("host name 'job-ps-0.ns.svc' did not resolve (Name or service not known)")
        == 0);
  CHECK(took >= 300ms);
  CHECK(took < 2s);
  CHECK(lookups >= 3);
  CHECK(lookups <= 6);  // 50, 100, 150 (to the deadline): backoff, not a spin
  CHECK(resolve_host("localhost").empty());
  CHECK(!resolve_host("no-such-host.invalid").empty());
}
