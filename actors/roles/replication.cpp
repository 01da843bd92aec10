#include "actors/roles/replication.hpp"

#include <algorithm>

namespace actorps {

void replication_queue::run_or_queue(std::function<void()> apply) {
  if (waiting_.empty() && !draining_) return apply();
  waiting_.push_back({next_++, true, std::move(apply)});
  drain();
}

uint64_t replication_queue::expect(std::function<void()> apply) {
  waiting_.push_back({next_, false, std::move(apply)});
  return next_++;
}

void replication_queue::complete(uint64_t ticket) {
  auto i = std::find_if(waiting_.begin(), waiting_.end(),
                        [&](const entry& e) { return e.ticket == ticket; });
  if (i == waiting_.end()) return;  // answered twice (a late error): already applied
  i->done = true;
  drain();
}

void replication_queue::complete_all() {
  for (auto& e : waiting_) e.done = e.done || !e.held;
  drain();
}

uint64_t replication_queue::hold() {
  waiting_.push_back({next_, false, [] {}, true});
  return next_++;
}

void replication_queue::drain() {
  if (draining_) return;  // an apply that queues another: the loop below reaches it
  draining_ = true;
  while (!waiting_.empty() && waiting_.front().done) {
    auto apply = std::move(waiting_.front().apply);
    waiting_.pop_front();
    apply();
  }
  draining_ = false;
}

void replication_window::send(std::function<void()> send) {
  held_.push_back(std::move(send));
  pump();
}

void replication_window::answered() {
  if (in_flight_ > 0) --in_flight_;
  pump();
}

void replication_window::pump() {
  if (pumping_) return;  // a send answered at once (answered() inside it): the loop goes on
  pumping_ = true;
  while (!held_.empty() && in_flight_ < limit) {
    auto send = std::move(held_.front());
    held_.pop_front();
    ++in_flight_;
    send();
  }
  pumping_ = false;
}

} // namespace actorps
