#include "actors/link/loop_execution_unit.hpp"

#include <caf/abstract_actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>

#include <algorithm>

namespace actorps {

loop_execution_unit::loop_execution_unit(caf::actor_system& sys) : caf::execution_unit(&sys) {}

loop_execution_unit::~loop_execution_unit() { hand_over(); }

void loop_execution_unit::add_guest(const caf::actor& guest) {
  auto* job = dynamic_cast<caf::resumable*>(caf::actor_cast<caf::abstract_actor*>(guest));
  if (job == nullptr) return;
  guest_handles_.push_back(guest);
  guests_.push_back(job);
}

bool loop_execution_unit::is_guest(caf::resumable* job) const {
  return std::find(guests_.begin(), guests_.end(), job) != guests_.end();
}

void loop_execution_unit::exec_later(caf::resumable* job) {
  // Off the loop's thread (a unit kept by an actor and used elsewhere) or not a guest: CAF's
  // scheduler runs it, with the reference CAF added for its scheduling.
  if (std::this_thread::get_id() != thread_ || !is_guest(job)) {
    system().scheduler().enqueue(job);
    return;
  }
  ready_.push_back(job);
}

void loop_execution_unit::run_ready() {
  while (!ready_.empty()) {
    auto* job = ready_.front();
    ready_.erase(ready_.begin());
    turns_.fetch_add(1, std::memory_order_relaxed);
    switch (job->resume(this, turn_messages)) {
      case caf::resumable::resume_later:
        system().scheduler().enqueue(job);  // more in its mailbox: the scheduler goes on
        break;
      case caf::resumable::done:
      case caf::resumable::awaiting_message:
      case caf::resumable::shutdown_execution_unit:
        caf::intrusive_ptr_release(job);  // the reference CAF added when it became ready
        break;
    }
  }
}

void loop_execution_unit::hand_over() {
  for (auto* job : ready_) system().scheduler().enqueue(job);
  ready_.clear();
}

} // namespace actorps
