// A task's join of its chief (actors/deploy/join_chief.hpp) ends with the chief: a chief that
// takes the join and ends without answering (a pod deleted mid-join) is reported at once, with
// its exit reason, instead of after the join's timeout.
#include "shard_fixture.hpp"

#include "actors/deploy/join_chief.hpp"
#include "actors/protocol/errors.hpp"

#include <caf/all.hpp>
#include <doctest/doctest.h>

#include <chrono>

using namespace actorps;
using namespace actorps::test;

namespace {

/// Stands in for the chief: keeps the join's promise unanswered, then ends with `reason`.
caf::behavior silent_chief(caf::event_based_actor* self, caf::error reason) {
  return {[=](join_now_atom) -> caf::result<caf::ok_atom> {
    auto promise = self->make_response_promise<caf::ok_atom>();
    self->quit(reason);  // never answered
    return promise;
  }};
}

/// Answers the join.
caf::behavior answering_chief(caf::event_based_actor*) {
  return {[](join_now_atom) { return caf::ok_atom::value; }};
}

} // namespace

TEST_CASE("join_chief: a chief that ends before it answers the join is reported with its reason, not after the timeout") {
  actor_fixture f;
  auto lost = make_error(errc::peer_unreachable, "the chief's pod was deleted");
  auto chief = f.sys->spawn(silent_chief, lost);
  // Without the chief's end, the join would wait this out and fail with request_timeout.
  auto join = [](auto* self, const caf::actor& to) {
    return self->request(to, std::chrono::seconds(20), join_now_atom::value);
  };
  auto refused = join_chief(*f.sys, chief, std::chrono::seconds(20), join);
  CHECK(refused == lost);
}

TEST_CASE("join_chief: an answered join is no error, a chief gone before it is refused with its exit reason") {
  actor_fixture f;
  auto join = [](auto* self, const caf::actor& to) {
    return self->request(to, std::chrono::seconds(30), join_now_atom::value);
  };
  auto chief = f.sys->spawn(answering_chief);
  CHECK_FALSE(join_chief(*f.sys, chief, std::chrono::seconds(30), join));
  // Gone before the join: the monitor reports it, with the reason it ended with.
  caf::scoped_actor self{*f.sys};
  self->monitor(chief);
  self->send_exit(chief, caf::exit_reason::user_shutdown);
  self->receive([](caf::down_msg&) {});
  auto refused = join_chief(*f.sys, chief, std::chrono::hours(1), join);
  // The down message, or the join bounced off the ended chief, whichever the helper reads first.
  CHECK((refused == caf::exit_reason::user_shutdown || refused == caf::sec::request_receiver_down));
}
