// Runs chosen actors (the shard and its asker) on the data link's event loop thread, so that a
// request read from a socket is handed to the shard, applied, and answered on the thread that
// read it, with no wake-up of a CAF scheduler thread in between.
//
// Why: across processes each request cost the ps process two thread wake-ups (the loop's, then
// a CAF worker's for the shard) where one process costs one; on a machine whose cores the
// kernels keep busy, a wake-up is CPU taken from them and latency on every clock.
//
// How, with CAF's own rules: a message enqueued with an execution unit makes a blocked actor
// ready through `exec_later` of that unit (CAF's middleman runs its brokers this way). Messages
// the loop's thread sends with this unit, and those the guests send while running on it, make
// a guest ready here; it runs after the loop's current batch of events, outside every lock of
// the hub. A guest made ready by anyone else (another actor, CAF's clock) runs on CAF's
// scheduler as before: CAF resumes an actor on one thread at a time whichever unit it is on.
// Anything other than a guest made ready here goes to the scheduler too, so no other actor's
// work (a checkpoint, a replica's forwarding) ever holds up the loop.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/execution_unit.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/message_id.hpp>
#include <caf/resumable.hpp>

#include <atomic>
#include <cstddef>
#include <thread>
#include <utility>
#include <vector>

namespace actorps {

class loop_execution_unit : public caf::execution_unit {
public:
  /// Messages a guest handles in one turn on the loop before the rest of its mailbox goes to
  /// the scheduler (the loop must get back to its sockets).
  static constexpr std::size_t turn_messages = 64;

  explicit loop_execution_unit(caf::actor_system& sys);
  ~loop_execution_unit() override;

  /// Lets `guest` (a scheduled, not detached, actor) run on the loop. Before the loop starts.
  void add_guest(const caf::actor& guest);
  /// Binds the unit to the calling thread, the loop's: call first thing on it.
  void bind_to_this_thread() { thread_ = std::this_thread::get_id(); }

  /// Sends (anonymously) on the loop's thread: a guest it makes ready runs at run_ready().
  template <class... Ts>
  void send(const caf::actor& dest, Ts&&... xs) {
    auto* ptr = caf::actor_cast<caf::abstract_actor*>(dest);
    if (ptr == nullptr) return;
    ptr->enqueue(caf::make_mailbox_element(nullptr, caf::make_message_id(), {},
                                           std::forward<Ts>(xs)...),
                 this);
  }

  void exec_later(caf::resumable* job) override;

  /// Runs the guests made ready, and those they make ready, until none is (on the loop's
  /// thread, holding no lock a guest's code takes).
  void run_ready();
  /// Gives whatever is still ready to CAF's scheduler (the loop is ending).
  void hand_over();

  /// Guest turns run on the loop so far (for tests).
  std::size_t turns() const { return turns_.load(std::memory_order_relaxed); }

private:
  bool is_guest(caf::resumable* job) const;

  std::vector<caf::actor> guest_handles_;  // keep the guests' memory while they may run here
  std::vector<caf::resumable*> guests_;
  std::vector<caf::resumable*> ready_;  // each holds the reference CAF added for its scheduling
  std::thread::id thread_;
  std::atomic<std::size_t> turns_{0};
};

} // namespace actorps
