// How a shard's operations wait for its hot standby (replication.hpp): the files of the shard
// that accept an operation (ps_shard.cpp, shard_pushes.cpp) run it through replicate().
#pragma once

#include "actors/roles/shard_state.hpp"

#include <caf/all.hpp>

#include <functional>
#include <type_traits>

namespace actorps::shard_internals {

/// Whether an operation must wait its turn: a standby acknowledges it first, or operations
/// accepted before it still wait for theirs.
inline bool replicating(const ps_shard_state& st) { return st.standby || !st.queue.idle(); }

/// Applies `apply` once the standby has acknowledged `msg` (and everything before it is
/// applied), or in its turn when there is no standby. A standby that is gone is dropped: what
/// waits is applied unprotected (the chief builds another). A standby refusing an operation
/// refuses what the primary's own checks, run again in `apply`, refuse too; one refusing the
/// state image holds nothing and is dropped. No timeout: a standby in this process fails a
/// request at once when it is gone, one in another process is monitored (its down message
/// completes what waits), and a frozen one is lost once the peer connection times out.
template <class... Ts>
void replicate(self_ptr self, std::function<void()> apply, Ts... msg) {
  constexpr bool image = (std::is_same_v<Ts, replica_image> || ...);
  auto& st = self->state;
  if (!st.standby) return st.queue.run_or_queue(std::move(apply));
  auto ticket = st.queue.expect(std::move(apply));
  auto standby = st.standby;
  auto window = st.window;
  window->send([=] {
    auto& st = self->state;
    if (st.standby != standby) {  // lost while this waited its turn: applied unprotected
      window->answered();
      return st.queue.complete(ticket);
    }
    self->request(standby, caf::infinite, msg...)
      .then([=](caf::ok_atom) {
              window->answered();
              self->state.queue.complete(ticket);
            },
            [=](caf::error& err) {
              auto& st = self->state;
              if ((image || err.category() != error_category) && st.standby == standby) {
                st.standby = nullptr;
                log_line(st.who(), "standby lost (" + describe(err) + "); serving unprotected");
              }
              window->answered();
              st.queue.complete(ticket);
            });
  });
}

} // namespace actorps::shard_internals
