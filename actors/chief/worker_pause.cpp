// The clock a change of size is taken at, across processes. In one process every worker is
// started knowing it (worker_config::pause_at: the changes are planned). actorps scale asks
// for one while the workers train, so the chief tells each worker the clock with a message,
// (pause, C), before it asks the shards for their state there:
//
//   round 1   every worker still training is asked to pause at C; each pauses at C, or at the
//             first clock it has not begun if that is later (an ssp or async worker ahead of
//             the others, or one whose next gradient is computed already), and says which
//   round 2   when one said a later clock, every worker is asked again with the latest said:
//             none has begun it (each waits at or before it), so all pause there
//
// So the shards' state at that clock holds exactly the pushes of the clocks before it in every
// mode, as in one process, and each planned minibatch is trained once. A worker that finishes
// or is lost meanwhile is not waited for: its answer is an error, skipped. A change that does
// not begin lets the workers go on: (pause, -1).
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

#include <algorithm>
#include <memory>

namespace actorps::chief_detail {

namespace {

/// The workers training now.
std::vector<worker_actor> training_workers(const chief_state& st) {
  std::vector<worker_actor> out;
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (st.workers[w] && st.live[w] && !st.done[w]) out.push_back(st.workers[w]);
  return out;
}

} // namespace

void pause_workers_at(self_ptr self, int64_t clock, std::function<void(int64_t)> then) {
  auto workers = training_workers(self->state);
  auto latest = std::make_shared<int64_t>(clock);
  auto answered = after_all(workers.size(), [=] {
    if (*latest == clock) return then(clock);
    log_line("chief", "a worker is past clock " + std::to_string(clock)
                        + " already: the workers pause at clock " + std::to_string(*latest));
    pause_workers_at(self, *latest, then);
  });
  for (auto& w : workers)
    self->request(w, self->state.cfg.request_timeout, pause_atom::value, clock)
      .then(
        [=](int64_t at) {
          *latest = std::max(*latest, at);
          answered();
        },
        [=](caf::error&) { answered(); });  // done or lost: nothing of it to wait for
}

void release_paused_workers(self_ptr self) {
  for (auto& w : training_workers(self->state))
    self->request(w, self->state.cfg.request_timeout, pause_atom::value, int64_t{-1})
      .then([](int64_t) {}, [](caf::error&) {});
}

} // namespace actorps::chief_detail
