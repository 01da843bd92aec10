// The rules a scale request and a spare ps or worker task meet at the chief: a spare's cluster
// view is the chief's with more ps or worker tasks after the same ones, and nothing else; its
// own address is read from it; only chief:0 and admin:0 may ask for a resize.
#include "actors/chief/cluster_view.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/peer_roles.hpp"
#include "actors/roles/authorisation.hpp"

#include <doctest/doctest.h>

namespace {

const std::string chief_view = "chief=h0:1;ps=h1:1,h2:1;worker=h3:1";

} // namespace

TEST_CASE("scale: a spare's view may list more ps or worker tasks after the chief's, nothing else") {
  struct case_t {
    const char* task_view;
    const char* difference;  // "" when the spare is taken
  };
  const case_t cases[] = {
    {"chief=h0:1;ps=h1:1,h2:1;worker=h3:1", ""},
    {"chief=h0:1;ps=h1:1,h2:1,h4:1;worker=h3:1", ""},
    {"chief=h0:1;ps=h1:1,h2:1,h4:1,h5:1;worker=h3:1", ""},
    {"chief=h0:1;ps=h1:1,h9:1,h4:1;worker=h3:1",
     "ps:1 is h9:1 in this task's cluster, h2:1 in the chief's"},
    {"chief=h0:1;ps=h1:1;worker=h3:1",
     "ps: this task's cluster lists 1 (h1:1), the chief's 2 (h1:1, h2:1)"},
    {"chief=h0:1;ps=h1:1,h2:1,h4:1;worker=h3:1,h6:1", ""},
    {"chief=h0:1;ps=h1:1,h2:1;worker=h3:1,h6:1,h7:1", ""},
    {"chief=h0:1;ps=h1:1,h2:1;worker=h9:1,h6:1",
     "worker:0 is h9:1 in this task's cluster, h3:1 in the chief's"},
    {"chief=h0:1;ps=h1:1,h2:1",
     "worker: this task's cluster lists 0 (), the chief's 1 (h3:1)"},
    {"chief=h8:1;ps=h1:1,h2:1,h4:1;worker=h3:1",
     "chief:0 is h8:1 in this task's cluster, h0:1 in the chief's"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.task_view);
    CHECK(actorps::cluster_view_difference_growing(c.task_view, chief_view) == c.difference);
  }
  // the exact rule, for every other task, still refuses a longer ps list
  CHECK(actorps::cluster_view_difference("chief=h0:1;ps=h1:1,h2:1,h4:1;worker=h3:1", chief_view)
        != "");
}

TEST_CASE("scale: a spare's address is read from its own view") {
  const std::string view = "chief=h0:1;ps=h1:1,h2:1,h4:7;worker=h3:1";
  CHECK(actorps::cluster_view_address(view, "ps", 2) == "h4:7");
  CHECK(actorps::cluster_view_address(view, "ps", 0) == "h1:1");
  CHECK(actorps::cluster_view_address(view, "worker", 0) == "h3:1");
  CHECK(actorps::cluster_view_address(view, "worker", 1) == "");
  CHECK(actorps::cluster_view_address(view, "ps", 3) == "");
  CHECK(actorps::cluster_view_address(view, "ps", -1) == "");
  CHECK(actorps::cluster_view_address(view, "evaluator", 0) == "");
}

TEST_CASE("scale: only chief:0 and admin:0 may ask for a resize") {
  using actorps::authorise_admin;
  using actorps::role_from_cn;
  CHECK_FALSE(authorise_admin(role_from_cn("admin:0"), "scale"));
  CHECK_FALSE(authorise_admin(role_from_cn("chief:0"), "scale"));
  for (const char* cn : {"admin:1", "worker:0", "ps:0", "evaluator:0", "alice", ""}) {
    auto err = authorise_admin(role_from_cn(cn), "scale to 3 shards");
    REQUIRE(err);
    CHECK(actorps::describe(err).find("only chief:0 and admin:0 may send it")
          != std::string::npos);
  }
}
