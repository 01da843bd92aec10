// A task's join of its chief, answered by the chief's reply or by the chief's end, whichever
// comes first.
//
// Why not the request alone: a chief that ends while a join waits (its pod deleted just as this
// task restarted and dialled it) never answers, and CAF 0.17 fails no request already sent to an
// actor that is lost: the task then waited out --connect-timeout (the TFJob harness's 300 s)
// instead of exiting retryable, for its restart to join the next chief.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <chrono>
#include <utility>

namespace actorps {

using join_now_atom = caf::atom_constant<caf::atom("joinnow")>;

/// Sends `join(asker, chief)` (a request answered with ok_atom) from a helper actor that
/// monitors `chief`, and returns once either answers: none on ok, the request's error, or the
/// chief's exit reason (request_receiver_down when it has none) if it went first. Blocks the
/// calling thread (a task's main thread); `join` is used before this returns only.
struct join_chief_state {
  caf::response_promise promise;  // the caller's join_now, while the join waits
  caf::error chief_gone;          // the chief ended before join_now came
};

template <class Handle, class Join>
caf::error join_chief(caf::actor_system& sys, const Handle& chief,
                      std::chrono::milliseconds timeout, Join& join) {
  auto asker = sys.spawn([&join, chief](caf::stateful_actor<join_chief_state>* me)
                           -> caf::behavior {
    me->monitor(chief);
    me->set_down_handler([me](caf::down_msg& dm) {
      auto reason = dm.reason ? dm.reason : make_error(caf::sec::request_receiver_down);
      if (!me->state.promise.pending()) {
        me->state.chief_gone = std::move(reason);
        return;
      }
      me->state.promise.deliver(std::move(reason));
      me->quit();
    });
    return {[=, &join](join_now_atom) -> caf::result<caf::ok_atom> {
      if (me->state.chief_gone) {
        me->quit();
        return me->state.chief_gone;
      }
      me->state.promise = me->make_response_promise();
      join(me, chief).then(
        [me](caf::ok_atom) {
          me->state.promise.deliver(caf::ok_atom::value);
          me->quit();
        },
        [me](caf::error& err) {
          me->state.promise.deliver(std::move(err));
          me->quit();
        });
      return caf::delegated<caf::ok_atom>{};
    }};
  });
  caf::error refused;
  caf::scoped_actor self{sys};
  // The join's own timeout answers first; the margin only bounds a helper that never ran.
  self->request(asker, timeout + std::chrono::seconds(15), join_now_atom::value)
    .receive([](caf::ok_atom) {}, [&](caf::error& err) { refused = std::move(err); });
  caf::anon_send_exit(asker, caf::exit_reason::user_shutdown);
  return refused;
}

} // namespace actorps
