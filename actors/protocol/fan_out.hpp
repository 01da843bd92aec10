// The one fan-out: "ask every shard, collect the replies in shard order, fail on the first
// error" (the chief initialising, checkpointing, restoring, re-admitting a worker, summing up;
// the evaluator's snapshots; a user's worker_client), and its fan-in twin for callbacks: "start
// every role, go on once all have".
#pragma once

#include <caf/error.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace actorps {

template <class Reply>
struct gathered_replies {
  std::vector<Reply> replies;
  std::size_t missing;
  bool failed = false;
};

/// Sends `count` requests (`ask(i)` sends the i-th and returns its response handle) and calls
/// `done(replies)` with the replies in index order once all have come, or `failed(error)` with
/// the first error; whatever comes after that error is dropped. `each(i, reply)` sees every
/// reply as it comes, before `done`. With `count` 0, `done` runs at once with no replies.
template <class Reply, class Ask, class Each, class Done, class Failed>
void ask_each(std::size_t count, Ask&& ask, Each each, Done done, Failed failed) {
  if (count == 0) {
    done(std::vector<Reply>{});
    return;
  }
  auto state = std::make_shared<gathered_replies<Reply>>();
  state->replies.resize(count);
  state->missing = count;
  for (std::size_t i = 0; i < count; ++i)
    ask(i).then(
      [=](Reply& reply) {
        if (state->failed) return;
        each(i, reply);
        state->replies[i] = std::move(reply);
        if (--state->missing == 0) done(std::move(state->replies));
      },
      [=](caf::error& err) {
        if (state->failed) return;
        state->failed = true;
        failed(err);
      });
}

/// ask_each without a look at each reply.
template <class Reply, class Ask, class Done, class Failed>
void ask_each(std::size_t count, Ask&& ask, Done done, Failed failed) {
  ask_each<Reply>(count, std::forward<Ask>(ask), [](std::size_t, const Reply&) {}, std::move(done),
                  std::move(failed));
}

/// A callback to call `count` times (once per role started, say); the last call runs `then`.
/// With `count` 0, `then` runs at once.
inline std::function<void()> after_all(std::size_t count, std::function<void()> then) {
  if (count == 0) {
    then();
    return [] {};
  }
  auto missing = std::make_shared<std::size_t>(count);
  return [missing, then = std::move(then)] {
    if (*missing > 0 && --*missing == 0) then();
  };
}

} // namespace actorps
